package gitmem_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/retry"
)

// mirrorSetup is a repo synced with its primary, plus a second server (no
// token) as the mirror.
func mirrorSetup(t *testing.T, id string) (*gitserver.Server, *gitserver.Server, *gitmem.Repo, gitmem.Remote) {
	t.Helper()
	primary, mirror := gitserver.New(t, testToken), gitserver.New(t, "")
	r := mustClone(t, primary, id)
	commitAndSync(t, r, "base.md", "base\n")
	mirror.RepoDir(id) // an empty bare repository, as a host makes one
	return primary, mirror, r, gitmem.Remote{URL: mirror.RemoteURL(id)}
}

func commitAndSync(t *testing.T, r *gitmem.Repo, rel, content string) {
	t.Helper()
	writeFile(t, r.Dir, rel, content)
	if _, err := r.CommitWrite([]string{rel}, "memory: update "+rel); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// sameLog fails unless the mirror's main has exactly the primary's commits,
// in order, and passes git fsck --strict.
func sameLog(t *testing.T, primary, mirror *gitserver.Server, id string) {
	t.Helper()
	want := git(t, primary.RepoDir(id), "log", "--format=%H %s", "main")
	got := git(t, mirror.RepoDir(id), "log", "--format=%H %s", "main")
	if got != want {
		t.Fatalf("mirror's log differs from the primary's:\nmirror:\n%s\nprimary:\n%s", got, want)
	}
	git(t, mirror.RepoDir(id), "fsck", "--strict")
}

func TestRepo_PushMirror(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("IncrementalAndOnlyWhatReachedThePrimary", func(t *testing.T) {
		primary, mirror, r, m := mirrorSetup(t, "inc")
		res, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{})
		if err != nil || res.Commits != 1 || !res.From.IsZero() {
			t.Fatalf("first mirror push: %+v %v", res, err)
		}
		sameLog(t, primary, mirror, "inc")
		commitAndSync(t, r, "a.md", "a\n")
		commitAndSync(t, r, "b.md", "b\n")
		// A local commit not yet on the primary is not mirrored.
		writeFile(t, r.Dir, "local.md", "local\n")
		if _, err := r.CommitWrite([]string{"local.md"}, "memory: create local.md"); err != nil {
			t.Fatal(err)
		}
		before := res.Tip
		if res, err = r.PushMirror(ctx, m, gitmem.MirrorOptions{}); err != nil || res.Commits != 2 || res.From != before || res.Objects > 6 {
			t.Fatalf("second mirror push: %+v %v (want 2 commits since %s, a few objects)", res, err, before)
		}
		sameLog(t, primary, mirror, "inc")
		if head, _ := r.MirrorHead(); head != res.Tip {
			t.Fatalf("mirror ref %s, want %s", head, res.Tip)
		}
		if pos, err := r.MirrorPosition(); err != nil || pos.Pending != 0 {
			t.Fatalf("position after push: %+v %v", pos, err)
		}
		// Up to date: nothing sent.
		if res, err = r.PushMirror(ctx, m, gitmem.MirrorOptions{}); err != nil || res.Commits != 0 {
			t.Fatalf("third mirror push: %+v %v", res, err)
		}
		commitAndSync(t, r, "c.md", "c\n")
		if pos, err := r.MirrorPosition(); err != nil || pos.Pending != 2 { // local.md went out with c.md
			t.Fatalf("position: %+v %v, want 2 pending", pos, err)
		}
	})
	t.Run("ForeignCommitsAreNotOverwritten", func(t *testing.T) {
		primary, mirror, r, m := mirrorSetup(t, "foreign")
		if _, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{}); err != nil {
			t.Fatal(err)
		}
		// Someone pushes to the mirror behind memfsd's back.
		peer := filepath.Join(t.TempDir(), "peer")
		git(t, filepath.Dir(peer), "clone", "-q", m.URL, peer)
		writeFile(t, peer, "theirs.md", "theirs\n")
		git(t, peer, "add", "theirs.md")
		git(t, peer, "commit", "-q", "-m", "theirs")
		git(t, peer, "push", "-q", "origin", "main")
		theirs := git(t, mirror.RepoDir("foreign"), "rev-parse", "main")
		commitAndSync(t, r, "a.md", "a\n")
		_, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{})
		if !errors.Is(err, gitmem.ErrMirrorDiverged) || retry.ClassOf(err) != retry.ClassNonFastForward {
			t.Fatalf("push onto a mirror with foreign commits: %v (class %q), want ErrMirrorDiverged", err, retry.ClassOf(err))
		}
		if got := git(t, mirror.RepoDir("foreign"), "rev-parse", "main"); got != theirs {
			t.Fatalf("the mirror's foreign commit was overwritten: %s, want %s", got, theirs)
		}
		res, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{Force: true})
		if err != nil || !res.Replaced {
			t.Fatalf("forced mirror push: %+v %v", res, err)
		}
		sameLog(t, primary, mirror, "foreign")
	})
	t.Run("FollowsAReplacedPrimary", func(t *testing.T) {
		primary, mirror, r, m := mirrorSetup(t, "replaced")
		commitAndSync(t, r, "a.md", "a\n")
		first, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The primary's history is replaced (a server reset): a new root.
		peer := filepath.Join(t.TempDir(), "peer")
		git(t, filepath.Dir(peer), "init", "-q", "-b", "main", peer)
		writeFile(t, peer, "fresh.md", "fresh\n")
		git(t, peer, "add", "fresh.md")
		git(t, peer, "commit", "-q", "-m", "fresh start")
		git(t, peer, "push", "-q", "-f", cliURL(primary, "replaced"), "main")
		if _, err := r.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		// Without memfsd's record of what it put there, that is a mirror
		// with commits of its own.
		if _, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{}); !errors.Is(err, gitmem.ErrMirrorDiverged) {
			t.Fatalf("replaced primary, no record of the mirror's tip: %v, want ErrMirrorDiverged", err)
		}
		res, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{Ours: first.Tip})
		if err != nil || !res.Replaced {
			t.Fatalf("mirror push after the primary was replaced: %+v %v", res, err)
		}
		sameLog(t, primary, mirror, "replaced")
	})
	t.Run("DownThenUp", func(t *testing.T) {
		primary, mirror, r, m := mirrorSetup(t, "down")
		f := mirror.AddFault(&gitserver.Fault{Count: -1, Status: 503})
		_, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{})
		if retry.ClassOf(err) != retry.ClassRetryable {
			t.Fatalf("mirror down: %v (class %q), want retryable", err, retry.ClassOf(err))
		}
		if f.Hits.Load() == 0 {
			t.Fatal("the fault took no request")
		}
		// A mirror host that refuses connections.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		refused := gitmem.Remote{URL: "http://" + l.Addr().String() + "/v1/git/down/state.git"}
		l.Close()
		if _, err := r.PushMirror(ctx, refused, gitmem.MirrorOptions{}); retry.ClassOf(err) != retry.ClassRetryable {
			t.Fatalf("mirror refusing connections: %v (class %q), want retryable", err, retry.ClassOf(err))
		}
		mirror.ClearFaults()
		if _, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{}); err != nil {
			t.Fatal(err)
		}
		sameLog(t, primary, mirror, "down")
	})
	t.Run("SilentMirrorHoldsNoLock", func(t *testing.T) {
		primary, mirror, r, m := mirrorSetup(t, "silent")
		f := mirror.AddFault(&gitserver.Fault{Count: -1, Hang: true})
		done := make(chan error, 1)
		hctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _, err := r.PushMirror(hctx, m, gitmem.MirrorOptions{}); done <- err }()
		waitHits(t, f)
		start := time.Now()
		commitAndSync(t, r, "while.md", "written while the mirror hangs\n")
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("a commit and primary push took %s while the mirror hung", took)
		}
		git(t, primary.RepoDir("silent"), "cat-file", "-e", "main:while.md")
		cancel()
		if err := <-done; err == nil {
			t.Fatal("the hung mirror push reported success")
		}
		f.Release()
		mirror.ClearFaults()
		if _, err := r.PushMirror(ctx, m, gitmem.MirrorOptions{}); err != nil {
			t.Fatal(err)
		}
		sameLog(t, primary, mirror, "silent")
	})
}

func waitHits(t *testing.T, f *gitserver.Fault) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.Hits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the mirror saw no request")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cliURL is the agent's primary with the token in it (test peer only).
func cliURL(srv *gitserver.Server, id string) string {
	return fmt.Sprintf("http://%s:%s@%s", gitserver.Username, testToken, srv.URL[len("http://"):]) + "/v1/git/" + id + "/state.git"
}
