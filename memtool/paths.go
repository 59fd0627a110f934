package memtool

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/memfsd/memfsd/internal/atomicfile"
	"github.com/memfsd/memfsd/worktree"
)

// Root is the path the model sees for the memory folder.
const Root = "/memories"

// resolve maps a model path to the path relative to the memory folder ("" is
// the folder itself) and the absolute path. Paths are untrusted: encoded
// forms, backslashes, NUL, ".git" and anything that resolves (symlinks
// included) outside the folder are refused.
func (t *Tool) resolve(p string) (rel, abs string, err error) {
	if strings.ContainsRune(p, 0) {
		return "", "", toolErr("Path %s contains a NUL byte", quoteNUL(p))
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
	rel = strings.Join(stack, "/")
	abs = filepath.Join(t.Dir, filepath.FromSlash(rel))
	if err := t.checkSymlinks(abs); err != nil {
		return "", "", err
	}
	return rel, abs, nil
}

// checkSymlinks resolves the longest existing prefix of abs and checks it
// stays inside the memory folder and out of .git.
func (t *Tool) checkSymlinks(abs string) error {
	root, err := filepath.EvalSymlinks(t.Dir)
	if err != nil {
		return toolErr("memory folder unavailable: %v", err)
	}
	cur := abs
	for {
		resolved, err := filepath.EvalSymlinks(cur)
		if err == nil {
			if resolved != root && !strings.HasPrefix(resolved, root+string(filepath.Separator)) {
				return toolErr("Path would escape /memories directory via symlink")
			}
			if resolved == root {
				return nil
			}
			inside := filepath.ToSlash(strings.TrimPrefix(resolved, root+string(filepath.Separator)))
			if worktree.Check(inside) != nil {
				return toolErr("Path would reach .git via symlink")
			}
			return nil
		}
		// Missing (or ENOTDIR): check the nearest parent that exists.
		parent := filepath.Dir(cur)
		if parent == cur || len(parent) < len(t.Dir) {
			return nil
		}
		cur = parent
	}
}

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
	case worktree.ReasonTemp:
		return toolErr("Path %s uses memfsd's temporary-file prefix %s; choose another name", p, atomicfile.Prefix)
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
