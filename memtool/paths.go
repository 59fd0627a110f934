package memtool

import (
	"errors"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/worktree"
)

// Root is the path the model sees for the memory folder.
const Root = "/memories"

// resolve maps a model path to the path relative to the memory folder ("" is
// the folder itself) and to src, what a read of it reads: rel itself, or,
// when rel is a symbolic link, the path inside the folder the link leads
// to. Paths are untrusted: encoded forms, backslashes, NUL, ".git", a link
// on the way, and a link at the end that leads outside are refused.
func (t *call) resolve(p string) (rel, src string, err error) {
	if strings.ContainsRune(p, 0) {
		return "", "", toolErr("Path %s contains a NUL byte", quoteNUL(p))
	}
	if worktree.OddName(p) {
		return "", "", toolErr("Path %s has a control character (e.g. a newline) or bytes that are not UTF-8 in it; use a plain name", strconv.Quote(p))
	}
	if strings.ContainsRune(p, '\\') {
		return "", "", toolErr("Path %s contains a backslash; use / between folders", p)
	}
	low := strings.ToLower(p)
	for _, enc := range []string{"%2e", "%2f", "%5c", "%00"} {
		if strings.Contains(low, enc) {
			return "", "", toolErr("Path %s contains a URL-encoded character (%s); write paths plainly", p, enc)
		}
	}
	if p != Root && !strings.HasPrefix(p, Root+"/") {
		return "", "", toolErr("Path must start with /memories, got: %s", p)
	}
	var stack []string
	for _, part := range strings.Split(strings.TrimPrefix(p, Root), "/") {
		switch {
		case part == "" || part == ".":
		case part == "..":
			if len(stack) == 0 {
				return "", "", toolErr("Path %s would escape /memories directory", p)
			}
			stack = stack[:len(stack)-1]
		default:
			// Each name as written, before ".." is applied: a path that
			// passes through .git is refused even if it climbs out again.
			if err := untrackable(p, part); err != nil {
				return "", "", err
			}
			stack = append(stack, part)
		}
	}
	rel, err = t.followWay(strings.Join(stack, "/"))
	if err != nil {
		return "", "", err
	}
	src, err = t.followLinks(rel)
	if err != nil {
		return "", "", err
	}
	return rel, src, nil
}

// errViaSymlink is the answer to a path whose link leads outside the
// folder (on the way or at its end), or that meets a link where the look
// saw a folder (the agent swapped it meanwhile: no act passes a link).
var errViaSymlink = toolErr("Path would escape /memories directory via symlink")

// followWay replaces each link on the way to rel's last name (a folder
// link inside the memory folder, as the reference handler follows it) by
// where it leads, so that what it returns passes no link: every act then
// goes through t.wt by that path, which the kernel refuses to resolve
// through a link (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS). A link
// the agent puts there after this look makes the act fail, never escape.
// A link leading outside the folder or into .git is refused; the last
// name is left as it is (followLinks decides about it).
func (t *call) followWay(rel string) (string, error) {
	if rel == "" {
		return "", nil
	}
	parts := strings.Split(rel, "/")
	var done []string // the resolved, link-free part
	for hops, i := 0, 0; i < len(parts)-1; i++ {
		cand := strings.Join(append(done, parts[i]), "/")
		st, err := t.wt.Lstat(cand)
		if err != nil {
			if isLinkRefusal(err) {
				return "", errViaSymlink // a link now, where the walk saw a folder
			}
			break // missing: the command answers that
		}
		if !isLink(st) {
			if !isDir(st) {
				break // a file on the way: the command answers that
			}
			done = append(done, parts[i])
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", errViaSymlink
		}
		f, err := t.wt.Read(cand)
		if err != nil || f == nil || f.Mode != worktree.Symlink {
			return "", errViaSymlink // changed meanwhile
		}
		next, ok := t.linkTarget(cand, string(f.Data))
		if !ok {
			return "", errViaSymlink
		}
		if next != "" && worktree.Check(next) != nil {
			return "", toolErr("Path would reach .git via symlink")
		}
		// Walk again from the root: the target may pass links of its own.
		rest := parts[i+1:]
		parts = nil
		if next != "" {
			parts = strings.Split(next, "/")
		}
		parts = append(parts, rest...)
		done, i = nil, -1
	}
	return strings.Join(append(done, parts[len(done):]...), "/"), nil
}

// maxLinkHops bounds a chain of links at the end of a path.
const maxLinkHops = 8

// followLinks decides the answer for the links on rel: one on the way is
// refused; one at the end is followed (lexically, at most maxLinkHops
// times) and must lead inside the folder and out of .git. It returns what
// a read of rel reads. It decides the answer only: every act goes through
// t.wt, which refuses a link anywhere on its way whatever this saw, so an
// agent swapping a folder for a link after this look gains nothing.
func (t *call) followLinks(rel string) (string, error) {
	cur := rel
	for hop := 0; cur != ""; hop++ {
		parts := strings.Split(cur, "/")
		for i := 1; i <= len(parts); i++ {
			st, err := t.wt.Lstat(strings.Join(parts[:i], "/"))
			if err != nil {
				if isLinkRefusal(err) {
					return "", errViaSymlink
				}
				return cur, nil // missing, or a file on the way: the command answers that
			}
			if isLink(st) && i < len(parts) {
				return "", errViaSymlink
			}
			if !isDir(st) && i < len(parts) {
				return cur, nil
			}
			if i == len(parts) && !isLink(st) {
				return cur, nil
			}
		}
		// cur is a link: follow it once more.
		if hop == maxLinkHops {
			return "", errViaSymlink
		}
		f, err := t.wt.Read(cur)
		if err != nil || f == nil || f.Mode != worktree.Symlink {
			return cur, nil // changed meanwhile: the command's own read answers
		}
		next, ok := t.linkTarget(cur, string(f.Data))
		if !ok {
			return "", errViaSymlink
		}
		if next != "" && worktree.Check(next) != nil {
			return "", toolErr("Path would reach .git via symlink")
		}
		cur = next
	}
	return cur, nil
}

// linkTarget is where the link at rel pointing to target leads, relative
// to the memory folder, worked out on the names alone; false when outside.
func (t *call) linkTarget(rel, target string) (string, bool) {
	if filepath.IsAbs(target) {
		target = filepath.Clean(target)
		for _, root := range t.rootNames() {
			if target == root {
				return "", true
			}
			if r, ok := strings.CutPrefix(target, root+string(filepath.Separator)); ok {
				return filepath.ToSlash(r), true
			}
		}
		return "", false
	}
	joined := path.Join(path.Dir(rel), filepath.ToSlash(target))
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return "", false
	}
	if joined == "." {
		return "", true
	}
	return joined, true
}

// rootNames are the names an absolute link may use for the memory folder:
// its path as opened and that path with its own links resolved (memfsd's,
// above the folder, e.g. /tmp on macOS).
func (t *call) rootNames() []string {
	root := filepath.Clean(t.wt.Path())
	names := []string{root}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
		names = append(names, real)
	}
	return names
}

// isLinkRefusal reports whether err is the kernel refusing a link on the
// way (openat2's RESOLVE_NO_SYMLINKS or RESOLVE_BENEATH).
func isLinkRefusal(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV)
}

// refusedOnWay reports whether an act failed on its way to the file: a
// link (refused), or something no longer a folder (ENOTDIR: openat2 opens
// a final link as itself, which is not a folder). Asked only of acts that
// follow a look which saw folders there: the agent changed them meanwhile.
func refusedOnWay(err error) bool {
	return isLinkRefusal(err) || errors.Is(err, unix.ENOTDIR)
}

func isLink(st *syscall.Stat_t) bool    { return st.Mode&syscall.S_IFMT == syscall.S_IFLNK }
func isDir(st *syscall.Stat_t) bool     { return st.Mode&syscall.S_IFMT == syscall.S_IFDIR }
func isRegular(st *syscall.Stat_t) bool { return st.Mode&syscall.S_IFMT == syscall.S_IFREG }

// untrackable refuses a name that is not part of a memory path by the one
// rule (worktree.Check), with the tool's wording: what the scan and the
// watcher skip, the tool refuses.
func untrackable(p, part string) error {
	var pe *worktree.PathError
	if !errors.As(worktree.Check(part), &pe) {
		return nil
	}
	switch pe.Reason {
	case worktree.ReasonDotGit, worktree.ReasonNTFS, worktree.ReasonHFS:
		return toolErr("Path %s is inside .git, which holds memory's history and is not writable or readable here", p)
	}
	return toolErr("Path %s is not a valid memory path: %s", p, pe.Reason)
}

func quoteNUL(p string) string { return strings.ReplaceAll(p, "\x00", `\0`) }

// display is the canonical /memories path of rel.
func display(rel string) string {
	if rel == "" {
		return Root
	}
	return Root + "/" + rel
}
