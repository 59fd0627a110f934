package gitmem_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestRepo_Reflog: memfsd's ref moves are in git's reflog, as git's own.
func TestRepo_Reflog(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "rl")
	writeFile(t, r.Dir, "a.md", "a\n")
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: create a.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	peer := cliClone(t, srv, "rl")
	writeFile(t, peer, "b.md", "b\n")
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "from the peer")
	git(t, peer, "push", "-q", "origin", "main")
	if _, err := r.Pull(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := git(t, r.Dir, "reflog", "--format=%gs")
	want := "memfsd: pull: fast-forward\ncommit (initial): memory: create a.md"
	if log != want {
		t.Fatalf("git reflog:\n%s\nwant:\n%s", log, want)
	}
	if branch := git(t, r.Dir, "reflog", "show", "--format=%gs", "main"); !strings.Contains(branch, "commit (initial): memory: create a.md") {
		t.Fatalf("branch reflog:\n%s", branch)
	}
	git(t, r.Dir, "fsck", "--strict")
}
