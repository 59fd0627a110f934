package gitmem_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/retry"
)

// TestReconcile_OneRequestPush: a turn that only adds commits to the tip
// memfsd last saw is one POST, with no ref advertisement; each way the
// shortcut can go wrong ends pushed, never lost.
func TestReconcile_OneRequestPush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T, id string) (*gitserver.Server, *gitmem.Repo) {
		srv := gitserver.New(t, testToken)
		r := mustClone(t, srv, id)
		writeFile(t, r.Dir, "base.md", "base\n")
		if _, err := r.CommitWrite([]string{"base.md"}, "base"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		writeFile(t, r.Dir, "next.md", "next\n")
		if _, err := r.CommitWrite([]string{"next.md"}, "next"); err != nil {
			t.Fatal(err)
		}
		return srv, r
	}
	onRemote := func(t *testing.T, srv *gitserver.Server, id string, files ...string) {
		t.Helper()
		tree := git(t, srv.RepoDir(id), "ls-tree", "--name-only", "main")
		for _, f := range files {
			if !strings.Contains(tree, f) {
				t.Fatalf("%s not on the remote:\n%s", f, tree)
			}
		}
		git(t, srv.RepoDir(id), "fsck", "--strict")
	}
	t.Run("OneRequest", func(t *testing.T) {
		srv, r := setup(t, "one")
		before := srv.Requests()
		res, err := r.Reconcile(ctx)
		if err != nil || res.Pushed != 1 {
			t.Fatalf("reconcile: %+v %v", res, err)
		}
		if n := srv.Requests() - before; n != 1 {
			t.Fatalf("%d requests for a one-commit push, want 1", n)
		}
		onRemote(t, srv, "one", "next.md")
	})
	t.Run("ServerRefusesTheShortcut", func(t *testing.T) {
		srv, r := setup(t, "refuse")
		srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/refuse/state.git/git-receive-pack", Count: 1, Status: 400})
		if res, err := r.Reconcile(ctx); err != nil || res.Pushed != 1 {
			t.Fatalf("reconcile: %+v %v", res, err)
		}
		if srv.RequestsMatching("info/refs?service=git-receive-pack") < 2 {
			t.Fatal("no fallback to the advertisement")
		}
		onRemote(t, srv, "refuse", "next.md")
	})
	t.Run("StaleRememberedTip", func(t *testing.T) {
		srv, r := setup(t, "stale")
		peer := cliClone(t, srv, "stale")
		writeFile(t, peer, "theirs.md", "another writer\n")
		git(t, peer, "add", "-A")
		git(t, peer, "commit", "-q", "-m", "theirs")
		git(t, peer, "push", "-q", "origin", "main")
		res, err := r.Reconcile(ctx)
		if err != nil || res.Replayed != 1 {
			t.Fatalf("reconcile after another writer: %+v %v", res, err)
		}
		onRemote(t, srv, "stale", "next.md", "theirs.md")
	})
	t.Run("ServerFailsThePack", func(t *testing.T) {
		srv, r := setup(t, "fail")
		srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/fail/state.git/git-receive-pack", Count: 1, Status: 503})
		p := retry.Policy{Initial: 5e6, Multiplier: 2, Max: 5e7, Budget: 5e9}
		out, err := retry.Do(ctx, p, "sync", func(ctx context.Context) error { _, err := r.Reconcile(ctx); return err })
		if err != nil || out.Attempts != 2 {
			t.Fatalf("after a 503 on the pack: %v (%d attempts)", err, out.Attempts)
		}
		onRemote(t, srv, "fail", "next.md")
	})
}
