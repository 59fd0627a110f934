package embedded_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memfsd/memfsd/embedded"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/soak"
	"github.com/memfsd/memfsd/internal/testgit"
)

// TestEmbedded_GitGCBesideFetch: a git gc and a `git repack -A -d`, run
// over and over on the embedded remote's bare repository (as an operator,
// or receive-pack's auto gc after a git CLI peer's push, does), delete
// every pack while memfsd's in-process transport reads them; another
// writer pushes with the git CLI between our syncs. No sync may fail:
// a pack or object that vanished under the read is read again from the
// repository's new packs, never reported (scripts/interop-letta.sh once
// stopped on "permanent: fetch: object not found").
func TestEmbedded_GitGCBesideFetch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "remote", "state.git")
	// A history of some size: the upload-pack's walk of it is the window
	// a repack can fall into.
	seed, err := fixture.Bare(fixtureDir(t), 500, 1000)
	if err != nil {
		t.Fatal(err)
	}
	git(t, t.TempDir(), "clone", "-q", "--bare", "--no-local", seed, bare)
	r, err := gitmem.Clone(ctx, filepath.Join(t.TempDir(), "memory"), gitmem.Remote{URL: embedded.URL(bare)}, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	peer := filepath.Join(t.TempDir(), "peer")
	git(t, filepath.Dir(peer), "clone", "-q", "--no-local", bare, peer)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	gcs := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, args := range [][]string{{"gc", "-q"}, {"repack", "-A", "-d", "-q"}} {
				cmd := exec.Command("git", append([]string{"-C", bare}, args...)...)
				cmd.Env = testgit.Env()
				if cmd.Run() == nil {
					gcs++
				}
			}
			time.Sleep(20 * time.Millisecond) // the syncs get in between
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	turns := soak.Int(2, 5) // with the upload's retry off, 3 runs of 3 failed on the first turn
	for i := range turns {
		writeFile(t, peer, fmt.Sprintf("peer/n%d.md", i), "peer\n")
		git(t, peer, "add", "-A")
		git(t, peer, "commit", "-q", "-m", fmt.Sprintf("peer %d", i))
		gcPeerPush(t, peer)
		rel := fmt.Sprintf("ours/n%d.md", i)
		writeFile(t, r.Dir, rel, "ours\n")
		if _, err := r.CommitWrite([]string{rel}, "memory: create "+rel); err != nil {
			t.Fatalf("commit %s: %v", rel, err)
		}
		if _, err := r.Reconcile(ctx); err != nil {
			t.Fatalf("turn %d: sync while git gc repacks the embedded remote: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if gcs == 0 {
		t.Fatal("no git gc or repack ran beside the syncs")
	}
	if out, err := gitErr(bare, "fsck", "--strict", "--no-progress"); err != nil {
		t.Fatalf("git fsck on the embedded remote: %v\n%s", err, out)
	}
	t.Logf("%d turns, %d gc/repack runs beside them", turns, gcs)
}

// gcPeerPush pushes the git CLI peer's commit, rebasing on a rejection.
// git's own reads race the repacks too ("cannot open pack index", "not our
// ref"): after a few tries the commit waits for the next turn's push, as
// letta-code leaves it; the subject here is memfsd's side.
func gcPeerPush(t *testing.T, peer string) {
	t.Helper()
	var out string
	var err error
	for try := 0; try < 5; try++ {
		if out, err = gitErr(peer, "push", "-q", "origin", "HEAD:main"); err == nil {
			return
		}
		if out, err = gitErr(peer, "pull", "-q", "--rebase", "origin", "main"); err == nil {
			if out, err = gitErr(peer, "push", "-q", "origin", "HEAD:main"); err == nil {
				return
			}
		} else {
			_, _ = gitErr(peer, "rebase", "--abort")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("peer push left for the next turn: %v\n%s", err, out)
}
