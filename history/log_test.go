package history_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/internal/testgit"
)

// gitAt runs git in dir with author and committer dates fixed at unix
// second when: a history with merges and known commit-date order.
func gitAt(tb testing.TB, dir string, when int64, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	date := fmt.Sprintf("%d +0200", when)
	cmd.Env = append(testgit.Env(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// historyRepo builds, with the git CLI, a history that exercises every
// rule of a path-limited log: files and folders created, changed,
// deleted and re-created, a file that becomes a folder, a side branch
// merged twice (once taking one side's file, once with a file changed on
// both sides and resolved by hand), a multi-paragraph message and an
// empty commit. It returns the work tree, opened by gitmem.
func historyRepo(t *testing.T) (string, *gitmem.Repo) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "memory")
	git(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	when := int64(1700000000)
	commit := func(msg string, write map[string]string) {
		t.Helper()
		for p, c := range write {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if c == "" {
				git(t, dir, "rm", "-q", "-r", p)
				continue
			}
			os.MkdirAll(filepath.Dir(full), 0o755)
			os.WriteFile(full, []byte(c), 0o644)
			git(t, dir, "add", p)
		}
		when += 60
		gitAt(t, dir, when, "commit", "-q", "--allow-empty", "-m", msg)
	}
	commit("memory: create system/persona.md", map[string]string{"system/persona.md": "p1\n", "system/human.md": "h1\n"})
	commit("memory: create notes/a.md\n\nwhy: the first note\nsecond line of the reason", map[string]string{"notes/a.md": "a1\n"})
	commit("memory: update system/human.md", map[string]string{"system/human.md": "h2\n"})
	git(t, dir, "checkout", "-q", "-b", "side")
	commit("side: notes/b.md", map[string]string{"notes/b.md": "b1\n"})
	commit("side: touch a", map[string]string{"notes/a.md": "a-side\n"})
	git(t, dir, "checkout", "-q", "main")
	commit("main: notes/c.md", map[string]string{"notes/c.md": "c1\n"})
	when += 60
	gitAt(t, dir, when, "merge", "-q", "--no-ff", "-m", "memfsd: merge side", "side") // a.md from side, treesame to it
	commit("memory: delete notes/c.md", map[string]string{"notes/c.md": ""})
	commit("an empty commit", nil)
	commit("subject line one\nsubject line two\n\nbody paragraph\n\nMemory-Call: toolu_01", map[string]string{"notes/c.md": "c again\n"})
	commit("file to folder", map[string]string{"notes/b.md": ""})
	commit("file to folder, part 2", map[string]string{"notes/b.md/inner.md": "inner\n"})
	git(t, dir, "checkout", "-q", "side")
	commit("side: change a again", map[string]string{"notes/a.md": "a-side-2\n"})
	git(t, dir, "checkout", "-q", "main")
	commit("main: change a", map[string]string{"notes/a.md": "a-main\n"})
	when += 60
	cmd := exec.Command("git", "merge", "-q", "side")
	cmd.Dir = dir
	cmd.Env = testgit.Env()
	cmd.CombinedOutput() // conflicts on notes/a.md, resolved by hand below
	os.WriteFile(filepath.Join(dir, "notes", "a.md"), []byte("a-both\n"), 0o644)
	git(t, dir, "add", "notes/a.md")
	gitAt(t, dir, when, "commit", "-q", "-m", "memfsd: merge side, both kept")
	commit("memory: rename notes/c.md", map[string]string{"notes/c.md": "", "notes/d.md": "c again\n"})
	r, err := gitmem.Open(dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return dir, r
}

func hashes(cs []history.Commit) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Hash.String()
	}
	return out
}

// TestRepo_History_MatchesGitLog: for every path (the whole memory, files,
// folders, a deleted file, a file that became a folder, a path never
// there) and several limits, History lists the commits `git log -n N --
// P` lists, in its order, with git's %s, %b, author and date, and each
// commit's files under P as `git diff --name-status` against the first
// parent names them.
func TestRepo_History_MatchesGitLog(t *testing.T) {
	t.Parallel()
	dir, r := historyRepo(t)
	paths := []string{"", "notes", "notes/", "notes/a.md", "notes/b.md", "notes/c.md", "notes/b.md/inner.md", "system", "system/human.md", "system/persona.md", "nowhere.md", "notes/zzz"}
	for _, p := range paths {
		for _, limit := range []int{1, 3, 200} {
			got, err := r.History(p, limit)
			if err != nil {
				t.Fatalf("History(%q, %d): %v", p, limit, err)
			}
			args := []string{"log", "--format=%H", fmt.Sprintf("-n%d", limit)}
			if p != "" {
				args = append(args, "--", p)
			}
			var want []string
			if out := git(t, dir, args...); out != "" {
				want = strings.Split(out, "\n")
			}
			if !slices.Equal(hashes(got), want) {
				t.Fatalf("History(%q, %d) =\n%v\ngit log:\n%v", p, limit, hashes(got), want)
			}
			for _, c := range got {
				checkAgainstGit(t, dir, p, c)
			}
		}
	}
}

func checkAgainstGit(t *testing.T, dir, p string, c history.Commit) {
	t.Helper()
	h := c.Hash.String()
	want := strings.SplitN(git(t, dir, "show", "-s", "--format=%s%x00%an%x00%ae%x00%aI%x00%b", h), "\x00", 5)
	if c.Subject != want[0] || c.Author.Name != want[1] || c.Author.Email != want[2] || c.When.Format(time.RFC3339) != want[3] || c.Body != strings.TrimRight(want[4], "\n") {
		t.Fatalf("%s: got %q %q %q %s %q, git says %q", h[:7], c.Subject, c.Author.Name, c.Author.Email, c.When.Format(time.RFC3339), c.Body, want)
	}
	parent := "4b825dc642cb6eb9a060e54bf8d69288fbee4904" // the empty tree
	if ps := strings.Fields(git(t, dir, "show", "-s", "--format=%P", h)); len(ps) > 0 {
		parent = ps[0]
	}
	args := []string{"diff", "--no-renames", "--name-status", parent, h}
	if p != "" {
		args = append(args, "--", p)
	}
	var want2 []string
	if out := git(t, dir, args...); out != "" {
		for _, l := range strings.Split(out, "\n") {
			kind, path, _ := strings.Cut(l, "\t")
			kind = map[string]string{"A": history.ChangeCreate, "M": history.ChangeUpdate, "D": history.ChangeDelete}[kind]
			want2 = append(want2, kind+" "+path)
		}
	}
	var got []string
	for _, ch := range c.Changes {
		got = append(got, ch.Kind+" "+ch.Path)
	}
	if !slices.Equal(got, want2) {
		t.Fatalf("%s under %q: changes %v, git diff --name-status: %v", h[:7], p, got, want2)
	}
}

// TestRepo_FileAt_Revisions: FileAt reads what `git show REV:PATH` prints
// for every spelling of a revision memfsd accepts, and refuses the rest
// with the right error, never crashing or hanging on a ref the agent's
// shell forged (a loop of symbolic refs, a FIFO, a link).
func TestRepo_FileAt_Revisions(t *testing.T) {
	t.Parallel()
	dir, r := historyRepo(t)
	head := git(t, dir, "rev-parse", "HEAD")
	git(t, dir, "update-ref", "refs/memfsd/backup/1700000000", "HEAD~3")
	git(t, dir, "update-ref", "refs/remotes/origin/main", "HEAD~1")
	for _, rev := range []string{"HEAD", head, head[:7], head[:4], "main", "refs/heads/main", "HEAD~1", "HEAD^", "HEAD~~", "HEAD~3", "origin/main",
		"refs/memfsd/backup/1700000000", "memfsd/backup/1700000000", "side", "HEAD~1^2", "HEAD~1^1", "HEAD^0", "HEAD~1^2~1", "@"} {
		for _, p := range []string{"notes/a.md", "system/human.md", "notes/c.md", "notes/d.md"} {
			want, gitErr := gitErr(dir, "show", rev+":"+p)
			got, err := r.FileAt(p, rev)
			if gitErr != nil {
				if !errors.Is(err, history.ErrNotInRevision) {
					t.Fatalf("FileAt(%s, %s) = %v, git fails (%s): want ErrNotInRevision", p, rev, err, want)
				}
				continue
			}
			if err != nil || strings.TrimRight(string(got.Data), "\n") != want {
				t.Fatalf("FileAt(%s, %s) = %q, %v; git show: %q", p, rev, got.Data, err, want)
			}
			if got.Commit.String() != git(t, dir, "rev-parse", rev+"^{commit}") {
				t.Fatalf("FileAt(%s, %s) read commit %s", p, rev, got.Commit)
			}
		}
	}
	if _, err := r.FileAt("notes", "HEAD"); !errors.Is(err, history.ErrNotInRevision) {
		t.Fatalf("a folder: %v", err)
	}
	// Refused input.
	os.WriteFile(filepath.Join(dir, ".git", "refs", "heads", "loop"), []byte("ref: refs/heads/loop\n"), 0o644)
	syscall.Mkfifo(filepath.Join(dir, ".git", "refs", "heads", "fifo"), 0o644)
	os.Symlink("/etc/hostname", filepath.Join(dir, ".git", "refs", "heads", "link"))
	for _, tc := range []struct {
		rev  string
		want error
	}{
		{"", history.ErrBadRevision}, {"nope", history.ErrUnknownRevision}, {"HEAD~100", history.ErrUnknownRevision},
		{"HEAD^3", history.ErrUnknownRevision}, {"0000000000000000000000000000000000000000", history.ErrUnknownRevision},
		{"../../../etc/passwd", history.ErrBadRevision}, {"refs/heads/../../config", history.ErrBadRevision},
		{"HEAD~x", history.ErrBadRevision}, {"main:notes/a.md", history.ErrBadRevision}, {"~1", history.ErrBadRevision},
		{"ffff", history.ErrUnknownRevision}, {"abc", history.ErrUnknownRevision}, {"main@{1}", history.ErrBadRevision},
		{strings.Repeat("a", 600), history.ErrBadRevision},
	} {
		if _, err := r.FileAt("notes/a.md", tc.rev); !errors.Is(err, tc.want) {
			t.Errorf("FileAt(rev %q) = %v, want %v", tc.rev, err, tc.want)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, rev := range []string{"loop", "fifo", "link"} {
			if _, err := r.FileAt("notes/a.md", rev); err == nil {
				t.Errorf("forged ref %s: read through it", rev)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a forged ref (FIFO) hangs the read")
	}
	for _, p := range []string{"../x", "notes/../../x", ".git/config", "notes/.git/x", "/etc/passwd", ""} {
		if _, err := r.FileAt(p, "HEAD"); err == nil || errors.Is(err, history.ErrNotInRevision) {
			t.Errorf("path %q: %v, want refused", p, err)
		}
	}
	if _, err := r.History("../x", 5); err == nil {
		t.Error("history of ../x accepted")
	}
}

// TestRepo_FileAt_AmbiguousShortID: a 4-digit prefix two commits share is
// refused as ambiguous, naming both; more digits pick one.
func TestRepo_FileAt_AmbiguousShortID(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "memory")
	git(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	// 1,500 empty commits: two share 4 digits (birthday bound) for sure.
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	var in strings.Builder
	for i := range 1500 {
		msg := fmt.Sprintf("c%d", i)
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter x <x@x> %d +0000\ndata %d\n%s\nM 100644 inline f.md\ndata %d\n%s\n\n", 1700000000+i, len(msg), msg, len(msg), msg)
	}
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v %s", err, out)
	}
	git(t, dir, "checkout", "-q", "-f", "main")
	r, err := gitmem.Open(dir, gitmem.Remote{}, gitmem.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]string{}
	var a, b string
	for _, h := range strings.Split(git(t, dir, "rev-list", "main"), "\n") {
		if o, ok := seen[h[:4]]; ok {
			a, b = o, h
			break
		}
		seen[h[:4]] = h
	}
	if a == "" {
		t.Skip("no shared 4-digit prefix in 1,500 commits")
	}
	_, err = r.FileAt("f.md", a[:4])
	if !errors.Is(err, history.ErrAmbiguousRevision) || !strings.Contains(err.Error(), a[:12]) || !strings.Contains(err.Error(), b[:12]) {
		t.Fatalf("ambiguous %s: %v", a[:4], err)
	}
	for _, h := range []string{a, b} {
		n := 5
		for h[:n] == a[:n] && h[:n] == b[:n] {
			n++
		}
		got, err := r.FileAt("f.md", h[:n])
		if err != nil || got.Commit.String() != h {
			t.Fatalf("FileAt(%s) = %v, %v", h[:n], got.Commit, err)
		}
	}
}
