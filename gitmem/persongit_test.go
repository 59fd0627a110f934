package gitmem_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestRepo_PersonGitSigns: the signs a person's git operation leaves are
// read (a FIFO named REVERT_HEAD does not block the read), old ones count
// as left behind, and a commit with SkipStaged leaves a path someone else
// staged alone.
func TestRepo_PersonGitSigns(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "pg")
	gitDir := filepath.Join(r.Dir, ".git")
	signs := func() gitmem.PersonGitSigns {
		t.Helper()
		s, err := r.PersonGit(time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := signs(); s.Any() || len(s.Stale) > 0 {
		t.Fatalf("signs in a fresh clone: %+v", s)
	}

	// memfsd's own commit leaves none (its index matches HEAD).
	writeFile(t, r.Dir, "a.md", "a\n")
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: create a.md"); err != nil {
		t.Fatal(err)
	}
	if s := signs(); s.Any() {
		t.Fatalf("signs after memfsd's commit: %+v", s)
	}

	// A person's commit that ended leaves a COMMIT_EDITMSG older than the
	// branch: no sign.
	writeFile(t, r.Dir, "b.md", "b\n")
	git(t, r.Dir, "add", "b.md")
	if s := signs(); !slices.Equal(s.Signs, []string{"staged"}) || !slices.Equal(s.Staged, []string{"b.md"}) {
		t.Fatalf("after git add: %+v", s)
	}
	// Staged by the person: a commit with SkipStaged leaves it alone.
	writeFile(t, r.Dir, "c.md", "c\n")
	res, err := r.Commit(gitmem.CommitRequest{Paths: []string{"b.md", "c.md"}, SkipStaged: true, Message: func(v gitmem.PathView) string { return "memory: " + v.Kind + " " + v.Path }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Staged, []string{"b.md"}) || !slices.Equal(res.Committed, []string{"c.md"}) {
		t.Fatalf("commit with SkipStaged = staged %v committed %v", res.Staged, res.Committed)
	}
	if got := git(t, r.Dir, "diff", "--cached", "--name-only"); got != "b.md" {
		t.Fatalf("staged after memfsd's commit = %q", got)
	}
	git(t, r.Dir, "commit", "-q", "-m", "person")
	if s := signs(); s.Any() {
		t.Fatalf("signs after the person's commit: %+v", s)
	}

	// A commit waiting on its editor: COMMIT_EDITMSG newer than the branch.
	time.Sleep(20 * time.Millisecond) // mtimes have a kernel tick's resolution
	os.WriteFile(filepath.Join(gitDir, "COMMIT_EDITMSG"), []byte("msg\n"), 0o644)
	if s := signs(); !slices.Equal(s.Signs, []string{"COMMIT_EDITMSG"}) {
		t.Fatalf("editor open: %+v", s)
	}
	// A FIFO as REVERT_HEAD is a sign, read without blocking.
	if err := syscall.Mkfifo(filepath.Join(gitDir, "REVERT_HEAD"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan gitmem.PersonGitSigns, 1)
	go func() { s, _ := r.PersonGit(time.Now(), time.Minute); done <- s }()
	select {
	case s := <-done:
		if !slices.Contains(s.Signs, "REVERT_HEAD") {
			t.Fatalf("REVERT_HEAD as a FIFO: %+v", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading the signs blocked on a FIFO")
	}
	// Old signs are left behind, not in progress.
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{"COMMIT_EDITMSG", "REVERT_HEAD"} {
		os.Chtimes(filepath.Join(gitDir, f), old, old)
	}
	// The branch must look older still for COMMIT_EDITMSG to be after it.
	older := old.Add(-time.Hour)
	for _, f := range []string{"refs/heads/main", "logs/HEAD", "logs/refs/heads/main", "HEAD", "packed-refs"} {
		os.Chtimes(filepath.Join(gitDir, f), older, older)
	}
	s := signs()
	if s.Any() || !slices.Contains(s.Stale, "REVERT_HEAD") || !slices.Contains(s.Stale, "COMMIT_EDITMSG") {
		t.Fatalf("old signs: %+v", s)
	}
	// Staged long ago (the index untouched since): left behind, still listed.
	writeFile(t, r.Dir, "d.md", "d\n")
	git(t, r.Dir, "add", "d.md")
	os.Chtimes(filepath.Join(gitDir, "index"), old, old)
	if s := signs(); s.Any() || !slices.Contains(s.Stale, "staged") || !slices.Equal(s.Staged, []string{"d.md"}) {
		t.Fatalf("staged long ago: %+v", s)
	}
	// Left staged: committed exactly as staged (not the work tree's
	// bytes), by whom CommitStaged says; the index then matches HEAD.
	writeFile(t, r.Dir, "d.md", "d, written on after the git add\n")
	h, err := r.CommitStaged([]string{"d.md", "a.md"}, "memfsd: commit what was left staged in the folder", gitmem.Signature{Name: "memfsd", Email: "memfsd@memfsd.local"})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, r.Dir, "log", "-1", "--format=%H|%an|%s"); got != h.String()+"|memfsd|memfsd: commit what was left staged in the folder" {
		t.Fatalf("HEAD = %q", got)
	}
	if got := git(t, r.Dir, "show", "HEAD:d.md"); got != "d" {
		t.Fatalf("d.md committed as %q, want the staged bytes", got)
	}
	if got := git(t, r.Dir, "diff", "--cached", "--name-only"); got != "" {
		t.Fatalf("still staged: %q", got)
	}
	git(t, r.Dir, "fsck", "--strict")
	// The key tells signs apart.
	os.Remove(filepath.Join(gitDir, "REVERT_HEAD"))
	os.WriteFile(filepath.Join(gitDir, "MERGE_HEAD"), []byte("x\n"), 0o644)
	s1 := signs()
	time.Sleep(20 * time.Millisecond)
	os.WriteFile(filepath.Join(gitDir, "MERGE_HEAD"), []byte("y\n"), 0o644)
	if s2 := signs(); s1.Key == s2.Key || !s2.Any() {
		t.Fatalf("a touched sign kept its key: %q %q", s1.Key, s2.Key)
	}
}

// TestRepo_FolderMovedAwayIsNoStaging: a commit that names a folder the
// agent moved out of the memory (`mv notes /tmp`) leaves the index entries
// of its files as HEAD has them (their deletions are committed one by one
// by name). Before, the folder's name dropped every entry below it from
// the index, which read as a person's staging and held memfsd's commits.
func TestRepo_FolderMovedAwayIsNoStaging(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "mv")
	writeFile(t, r.Dir, "notes/a.md", "a\n")
	writeFile(t, r.Dir, "notes/b.md", "b\n")
	if _, err := r.CommitWrite([]string{"notes/a.md", "notes/b.md"}, "memory: notes"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(r.Dir, "notes"), filepath.Join(t.TempDir(), "notes")); err != nil {
		t.Fatal(err)
	}
	// What the watcher sends for a folder moved away: its name.
	if _, err := r.CommitWrite([]string{"notes"}, "memory: notes"); err != nil && !errors.Is(err, gitmem.ErrNothingToCommit) {
		t.Fatal(err)
	}
	s, err := r.PersonGit(time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if s.Any() || len(s.Staged) > 0 {
		t.Fatalf("a folder moved away read as a person's staging: %+v", s)
	}
	if out := git(t, r.Dir, "diff", "--cached", "--name-status"); out != "" {
		t.Fatalf("git diff --cached after the commit:\n%s", out)
	}
}
