package gitmem_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// Issue 44: git merge, revert and stash read the index long before they
// lock it, and write back what they read: a commit of memfsd's landing in
// between has its index entry undone (the index holds the file as before,
// HEAD as memfsd committed it). That is no person's staging: the look does
// not report it (it held every commit of the agent's, then got committed
// as staged, undoing the agent's write), and the next commit puts
// memfsd's entry back. Found by scripts/soak.sh persongit.
func TestRepo_IndexWrittenBackFromBeforeACommit(t *testing.T) {
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "clobber")
	dir := r.Dir
	r.Close()
	r, err := gitmem.Open(dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor, YieldToPerson: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	writeFile(t, dir, "a.md", "one\n")
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: create a.md"); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(r.GitDir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.md", "two\n")
	writeFile(t, dir, "b.md", "new\n")
	if _, err := r.CommitWrite([]string{"a.md", "b.md"}, "memory: a.md, b.md"); err != nil {
		t.Fatal(err)
	}
	// A git command that read the index before that commit writes it
	// back, through index.lock as git does.
	lock := filepath.Join(r.GitDir, "index.lock")
	if err := os.WriteFile(lock, before, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(lock, filepath.Join(r.GitDir, "index")); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "diff", "--cached", "--name-only"); got == "" {
		t.Fatal("the index written back shows nothing staged: the test proves nothing")
	}
	s, err := r.PersonGit(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(s.Signs, "staged") || len(s.Staged) > 0 {
		t.Fatalf("memfsd's own entries, undone, taken for a person's staging: %+v", s)
	}
	time.Sleep(gitmem.IndexQuiet) // the writer's quiet
	writeFile(t, dir, "c.md", "later\n")
	if _, err := r.CommitWrite([]string{"c.md"}, "memory: create c.md"); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)
}
