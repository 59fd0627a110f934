package worktree_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/testgit"
	"github.com/memfsd/memfsd/worktree"
)

// pathCases are paths and whether they are memory paths; git marks the
// ones git itself must agree on (its verify_path, with core.protectNTFS
// and core.protectHFS on).
var pathCases = []struct {
	rel    string
	ok     bool
	prefix string // the bad part's prefix, for refused paths
}{
	{"notes.md", true, ""},
	{"system/persona.md", true, ""},
	{"a/b/c/d.md", true, ""},
	{".gitignore", true, ""},
	{".gitattributes", true, ""},
	{"sub/.github/x.md", true, ""},
	{"x.git", true, ""},
	{".gitx", true, ""},
	{"git", true, ""},
	{"git~2", true, ""},
	{"..md", true, ""},
	{"...", true, ""},
	{"a.git/b", true, ""},
	{".g it", true, ""},
	{"sub/.gi", true, ""},
	{"mémoire/ñ.md", true, ""},

	{".git", false, ".git"},
	{".git/config", false, ".git"},
	{".GIT", false, ".GIT"},
	{".Git/x", false, ".Git"},
	{"sub/.git", false, "sub/.git"},
	{"sub/.git/HEAD", false, "sub/.git"},
	{"Deep/x/.Git/config", false, "Deep/x/.Git"},
	{"a/.gIt/b/c", false, "a/.gIt"},
	{".git.", false, ".git."},
	{".git ", false, ".git "},
	{".git. . ", false, ".git. . "},
	{"sub/.GIT../x", false, "sub/.GIT.."},
	{".git:stream", false, ".git:stream"},
	{"git~1", false, "git~1"},
	{"GIT~1/x", false, "GIT~1"},
	{"a/git~1 .", false, "a/git~1 ."},
	{`a\.git`, false, `a\.git`},
	{`a\git~1\b`, false, `a\git~1\b`},
	{".g\u200cit", false, ".g\u200cit"},
	{"\ufeff.GIT/x", false, "\ufeff.GIT"},
	{".gi\u200dt\u206a", false, ".gi\u200dt\u206a"},

	{"", false, ""},
	{"/abs.md", false, "/abs.md"},
	{"a//b", false, "a//b"},
	{"a/", false, "a/"},
	{"./a", false, "./a"},
	{"a/./b", false, "a/./b"},
	{"../a", false, ".."},
	{"a/../b", false, "a/../b"},
	{".", false, "."},
	{"..", false, ".."},
	{"a\x00b", false, "a\x00b"},
	// memfsd's temporary files live in .git/memfsd/tmp: this name is a
	// file like any other (a peer may push one).
	{".memfsd-tmp-123", true, ""},
	{"sub/.memfsd-tmp-take-1-2", true, ""},
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range pathCases {
		err := worktree.Check(c.rel)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", c.rel, err, c.ok)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, worktree.ErrUntrackable) {
			t.Errorf("Check(%q) = %v, not ErrUntrackable", c.rel, err)
		}
		var pe *worktree.PathError
		if !errors.As(err, &pe) || pe.Prefix != c.prefix || pe.Path != c.rel || pe.Reason == "" {
			t.Errorf("Check(%q) = %#v, want prefix %q", c.rel, pe, c.prefix)
		}
	}
}

// TestCheck_AgreesWithGit: every name the rule refuses for being .git is
// one git refuses too (and git takes every path the rule takes): the rule
// is git's, not a guess at it. git's update-index --add runs verify_path.
func TestCheck_AgreesWithGit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	testgit.Run(t, dir, "init", "-q")
	blob := testgit.Run(t, dir, "hash-object", "-w", "--stdin")
	for _, c := range pathCases {
		if c.rel == "" || strings.ContainsRune(c.rel, 0) {
			continue // not expressible to git
		}
		_, err := testgit.Try(dir, "-c", "core.protectNTFS=true", "-c", "core.protectHFS=true",
			"update-index", "--add", "--cacheinfo", "100644,"+blob+","+c.rel)
		if gitOK := err == nil; gitOK != c.ok {
			t.Errorf("%q: git accepts=%v (%v), rule accepts=%v", c.rel, gitOK, err, c.ok)
		}
	}
}

func TestSkip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rel    string
		isDir  bool
		skip   bool
		report bool
	}{
		{"notes.md", false, false, false},
		{"sub", true, false, false},
		{".git", true, true, false},            // the repository's own
		{".memfsd-tmp-9", false, false, false}, // an ordinary file (issue 27)
		{"sub/.memfsd-tmp-9", false, false, false},
		{".GIT", true, true, true},
		{"sub/.git", true, true, true},
		{"sub/.git", false, true, true},
		{"Deep/x/.Git", true, true, true},
		{"git~1", false, true, true},
		{".g\u200cit", true, true, true},
	} {
		skip, reason := worktree.Skip(c.rel, c.isDir)
		if skip != c.skip || (reason != "") != c.report {
			t.Errorf("Skip(%q, %v) = %v, %q; want skip=%v report=%v", c.rel, c.isDir, skip, reason, c.skip, c.report)
		}
	}
}
