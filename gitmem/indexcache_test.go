package gitmem_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// memfsd keeps the index parsed between its writes; a person's change to
// the index in between (a staged file, a same-size mode change) must be
// what the next write patches, not the copy memfsd remembers.
func TestRepo_IndexChangedBetweenWrites(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "ixc")
	commit := func(p string) {
		t.Helper()
		writeFile(t, r.Dir, p, "text of "+p+"\n")
		if _, err := r.CommitWrite([]string{p}, "memory: create "+p); err != nil {
			t.Fatal(err)
		}
	}
	commit("a.md")
	writeFile(t, r.Dir, "staged.md", "a person's staged file\n")
	git(t, r.Dir, "add", "staged.md")
	commit("b.md")
	if got := git(t, r.Dir, "diff", "--cached", "--name-only"); got != "staged.md" {
		t.Fatalf("staged after memfsd's write: %q, want staged.md", got)
	}
	// The same index size, only the mode bytes differ.
	git(t, r.Dir, "update-index", "--chmod=+x", "b.md")
	os.Chmod(filepath.Join(r.Dir, "b.md"), 0o755)
	commit("c.md")
	if got := git(t, r.Dir, "ls-files", "-s", "b.md"); !strings.HasPrefix(got, "100755") {
		t.Fatalf("b.md in the index after memfsd's write: %q, want mode 100755", got)
	}
	git(t, r.Dir, "commit", "-q", "-m", "a person's commit")
	commit("d.md")
	if st := git(t, r.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status: %q", st)
	}
	git(t, r.Dir, "fsck", "--strict")
}

// A write that changes nothing (the watcher's or a turn's re-check of a
// file the tool already committed) leaves .git/index as it is; a changed
// stat is still recorded.
func TestRepo_UnchangedWriteLeavesIndex(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "same")
	writeFile(t, r.Dir, "a.md", "text\n")
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(r.Dir, "a.md"), past, past)
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: create a.md"); err != nil {
		t.Fatal(err)
	}
	ino := func() uint64 {
		fi, err := os.Stat(filepath.Join(r.GitDir, "index"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	before := ino()
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: again"); !errors.Is(err, gitmem.ErrNothingToCommit) {
		t.Fatalf("re-check: %v", err)
	}
	if ino() != before {
		t.Fatal("the index was rewritten for a write that changed nothing")
	}
	// The same content with a new mtime: recorded, so git need not re-read it.
	later := past.Add(time.Minute)
	os.Chtimes(filepath.Join(r.Dir, "a.md"), later, later)
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: again"); !errors.Is(err, gitmem.ErrNothingToCommit) {
		t.Fatal(err)
	}
	if ino() == before {
		t.Fatal("a new stat was not recorded")
	}
	if got := git(t, r.Dir, "ls-files", "--debug", "a.md"); !strings.Contains(got, fmt.Sprintf("mtime: %d:", later.Unix())) {
		t.Fatalf("index entry: %q, want mtime %d", got, later.Unix())
	}
}
