package worktree

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrUntrackable is the error of every path that is not a memory path: one
// that git cannot track (a ".git" part in any case or disguise, ".", "..",
// empty parts, NUL) or that is not a clean relative path. (memfsd's own
// temporary files live in .git/memfsd/tmp: any other name is a file.)
var ErrUntrackable = errors.New("untrackable path")

// PathError says which part of a path makes it untrackable, and why.
type PathError struct {
	Path   string // the path checked
	Prefix string // Path up to and including the first bad part
	Reason string // why, in a few words an agent can read
	// Silent marks a path walkers skip without telling anyone: the
	// repository's own .git at the root.
	Silent bool
}

func (e *PathError) Error() string {
	return fmt.Sprintf("%s %q: %s", ErrUntrackable, e.Path, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUntrackable) hold.
func (e *PathError) Unwrap() error { return ErrUntrackable }

// Reasons, as PathError.Reason gives them.
const (
	ReasonDotGit  = ".git (in any case) is git's own name: git never tracks it or anything below it"
	ReasonNTFS    = "git reads this name as .git on Windows (NTFS) and never tracks it"
	ReasonHFS     = "git reads this name as .git on macOS (HFS+) and never tracks it"
	ReasonNotRel  = "not a clean relative path"
	ReasonNUL     = "a NUL byte is not allowed in a path"
	ReasonDotPart = `"." and ".." are not file names`
)

// Clean checks a work-tree-relative path by the one rule (Check) and
// returns it as a slash path.
func Clean(p string) (string, error) {
	p = filepath.ToSlash(p)
	if err := Check(p); err != nil {
		return "", err
	}
	return p, nil
}

// Check reports whether rel, a slash path relative to the memory folder,
// is a memory path: clean, relative, with no empty, "." or ".." part, no
// NUL, no part git refuses as .git (git's verify_path and fsck rules:
// ".git" in any case, ".git" followed by dots or spaces, "git~1", and the
// HFS+ spellings with ignorable Unicode code points). The error is a *PathError wrapping
// ErrUntrackable.
func Check(rel string) error {
	bad := func(prefix, reason string) error {
		e := &PathError{Path: rel, Prefix: prefix, Reason: reason}
		e.Silent = prefix == ".git" && reason == ReasonDotGit
		return e
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return bad(rel, ReasonNUL)
	}
	if rel == "" || rel[0] == '/' || path.Clean(rel) != rel {
		return bad(rel, ReasonNotRel)
	}
	end := 0
	for part := range strings.SplitSeq(rel, "/") {
		end += len(part)
		prefix := rel[:end]
		end++ // the slash
		if why := checkPart(part); why != "" {
			return bad(prefix, why)
		}
	}
	return nil
}

// checkPart is the rule for one name: "" when it may be tracked, else why
// not.
func checkPart(part string) string {
	switch {
	case part == "" || part == "." || part == "..":
		return ReasonDotPart
	case asciiFold(part, ".git"):
		return ReasonDotGit
	case isNTFSDotGit(part):
		return ReasonNTFS
	case isHFSDotGit(part):
		return ReasonHFS
	}
	// git (core.protectNTFS, on by default everywhere since 2.24) also
	// reads a backslash as a folder separator.
	for i := 0; i < len(part); i++ {
		if part[i] == '\\' && isNTFSDotGit(part[i+1:]) {
			return ReasonNTFS
		}
	}
	return ""
}

// isNTFSDotGit is git's is_ntfs_dotgit: ".git" or its 8.3 short name
// "git~1", in any case, followed by nothing but dots and spaces up to the
// end, a separator or an NTFS stream (":").
func isNTFSDotGit(name string) bool {
	var rest string
	switch {
	case len(name) >= 4 && asciiFold(name[:4], ".git"):
		rest = name[4:]
	case len(name) >= 5 && asciiFold(name[:5], "git~1"):
		rest = name[5:]
	default:
		return false
	}
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '/', '\\', ':':
			return true
		case '.', ' ':
		default:
			return false
		}
	}
	return true
}

// isHFSDotGit is git's is_hfs_dotgit: ".git" in any case once the code
// points HFS+ ignores are left out (e.g. ".g\u200cit").
func isHFSDotGit(name string) bool {
	next := func() rune {
		for {
			if name == "" {
				return 0
			}
			r, n := utf8.DecodeRuneInString(name)
			if r == utf8.RuneError && n <= 1 {
				return 0 // malformed UTF-8: git stops there as at the end
			}
			name = name[n:]
			if !hfsIgnored(r) {
				return r
			}
		}
	}
	if next() != '.' {
		return false
	}
	for _, want := range "git" {
		r := next()
		if r > 127 || !asciiFold(string(r), string(want)) {
			return false
		}
	}
	r := next()
	return r == 0 || r == '/'
}

// asciiFold compares s with the lower-case ASCII want, ignoring the case
// of ASCII letters only (git's tolower on bytes).
func asciiFold(s, want string) bool {
	if len(s) != len(want) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != want[i] {
			return false
		}
	}
	return true
}

// hfsIgnored lists the code points HFS+ drops from names (git's
// next_hfs_char).
func hfsIgnored(r rune) bool {
	return (r >= 0x200c && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) ||
		(r >= 0x206a && r <= 0x206f) || r == 0xfeff
}

// Skip is the rule for walkers of the memory folder (the scan, the
// watcher, the memory tool's listing): whether to skip the entry rel (a
// folder with all below it), and the reason to tell the agent — "" for an
// entry skipped silently (the repository's own .git at the root). isDir picks the wording.
func Skip(rel string, isDir bool) (skip bool, reason string) {
	err := Check(rel)
	if err == nil {
		return false, ""
	}
	var pe *PathError
	if !errors.As(err, &pe) || pe.Silent {
		return true, ""
	}
	if pe.Reason == ReasonDotGit && pe.Prefix == rel {
		if isDir {
			return true, "a .git folder (a repository of its own, or a copy of one): git never tracks it or anything in it"
		}
		return true, "a .git file (a submodule's or a worktree's link to a repository): git never tracks it"
	}
	return true, pe.Reason
}

// OddName reports a path that holds a control character (a newline, a
// tab, an escape, ...), a Unicode line or paragraph separator, or bytes
// that are not UTF-8: git can store it, but it would split a commit
// subject, a listing or a prompt, and the memory tool's JSON cannot name
// its bytes. A direct write of one is held; the memory tool refuses it.
func OddName(p string) bool {
	if !utf8.ValidString(p) {
		return true
	}
	for _, r := range p {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}
