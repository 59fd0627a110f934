package gitmem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

func TestRepo_CommitWrite(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "a1")
	writeFile(t, r.Dir, "notes/today.md", "hello\n")
	h, err := r.CommitWrite([]string{"notes/today.md"}, "memory: create /memories/notes/today.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, r.Dir, "log", "--format=%H|%an <%ae>|%s"); got != h.String()+"|agent-1 <agent-1@memfsd.local>|memory: create /memories/notes/today.md" {
		t.Fatalf("log = %q", got)
	}
	if got := git(t, r.Dir, "status", "--porcelain"); got != "" {
		t.Fatalf("status not clean: %q", got)
	}
	git(t, r.Dir, "fsck", "--strict")
	if _, err := r.CommitWrite([]string{"notes/today.md"}, "again"); !errors.Is(err, gitmem.ErrNothingToCommit) {
		t.Fatalf("second commit: %v", err)
	}
	res, err := r.Push(context.Background())
	if err != nil || res.Commits != 1 {
		t.Fatalf("push: %+v %v", res, err)
	}
	peer := cliClone(t, srv, "a1")
	if got := git(t, peer, "show", "HEAD:notes/today.md"); got != "hello" {
		t.Fatalf("peer sees %q", got)
	}
}
