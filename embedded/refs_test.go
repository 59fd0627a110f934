package embedded_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memfsd/memfsd/embedded"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/soak"
	"github.com/memfsd/memfsd/internal/testgit"
)

// TestEmbedded_RefsBesideGitCLI: memfsd pushes to the embedded remote
// while the git CLI, on the same bare repository, pushes too and packs the
// refs (`git pack-refs --all --prune`) in a loop, as
// scripts/interop-letta.sh does with letta-code beside memfsd. Every push
// either side was told succeeded must stay reachable from the branch, and
// neither git nor memfsd may ever read a broken ref: the embedded remote
// must move refs by git's lock protocol, not rewrite the ref file in place
// (a `pack-refs --prune` or a git push then loses the write, and a reader
// catches the file empty: "cannot lock ref ...: reference broken").
func TestEmbedded_RefsBesideGitCLI(t *testing.T) {
	t.Parallel()
	pushBesideGitCLI(t, func(int) []string { return []string{"pack-refs", "--all", "--prune"} })
}

// TestEmbedded_PushBesideGitGC: as TestEmbedded_RefsBesideGitCLI, with a
// `git gc` every 10th maintenance run. A gc's repack deletes the packs it
// listed when it started once it has written their reachable objects into
// its own: a pushed pack it listed before the push's ref moved, or could
// not read, lost memfsd's acknowledged commit ("missing commit" in fsck,
// "not our ref" for the peer) when go-git published the pack's .idx before
// the .pack and no .keep guarded it until the ref moved.
func TestEmbedded_PushBesideGitGC(t *testing.T) {
	t.Parallel()
	pushBesideGitCLI(t, func(i int) []string {
		switch i % 4 {
		case 1:
			return []string{"repack", "-a", "-d", "-q"}
		case 3:
			return []string{"gc", "-q"}
		}
		return []string{"pack-refs", "--all", "--prune"}
	})
}

// pushBesideGitCLI runs memfsd and a git CLI peer pushing to one bare
// repository while maint(i) runs in a loop beside them, and checks that
// no acknowledged push is lost and no ref is read broken.
func pushBesideGitCLI(t *testing.T, maint func(i int) []string) {
	t.Helper()
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "remote", "state.git")
	git(t, t.TempDir(), "init", "-q", "--bare", "-b", "main", bare)
	peer := filepath.Join(t.TempDir(), "peer")
	git(t, filepath.Dir(peer), "clone", "-q", bare, peer)
	writeFile(t, peer, "seed.md", "seed\n")
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "seed")
	git(t, peer, "push", "-q", "origin", "HEAD:main")
	r, err := gitmem.Clone(ctx, filepath.Join(t.TempDir(), "memory"), gitmem.Remote{URL: embedded.URL(bare)}, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	t.Cleanup(func() { r.Close() })

	var (
		mu     sync.Mutex
		acked  = map[string]string{} // commit → who was told it landed
		broken []string              // what read a broken ref, and how
	)
	seeBroken := func(who, out string) {
		for _, s := range []string{"broken", "bad content", "not our ref", "bad object"} {
			if strings.Contains(out, s) {
				mu.Lock()
				broken = append(broken, who+": "+out)
				mu.Unlock()
				return
			}
		}
	}
	ack := func(who, h string) {
		mu.Lock()
		acked[h] = who
		mu.Unlock()
	}

	stop := make(chan struct{})
	var bg sync.WaitGroup
	packs := 0
	bg.Add(1)
	go func() { // the operator's (or receive-pack's auto) maintenance
		defer bg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			args := maint(i)
			cmd := exec.Command("git", append([]string{"-C", bare}, args...)...)
			cmd.Env = testgit.Env()
			out, err := cmd.CombinedOutput()
			if err == nil {
				packs++
			}
			seeBroken("git "+args[0], string(out))
		}
	}()

	bg.Add(1)
	reads := 0
	go func() { // a reader of the loose ref, as git's files backend reads it
		defer bg.Done()
		loose := filepath.Join(bare, "refs", "heads", "main")
		for {
			select {
			case <-stop:
				return
			default:
			}
			data, err := os.ReadFile(loose)
			if err != nil {
				continue // packed and pruned: read from packed-refs
			}
			reads++
			if len(data) != 41 || data[40] != '\n' {
				seeBroken("read "+loose, fmt.Sprintf("reference broken: %q", data))
			}
		}
	}()

	turns := soak.Int(6, 15) // pushes each side
	var sides sync.WaitGroup
	sides.Add(2)
	go func() { // the git CLI peer
		defer sides.Done()
		for i := range turns {
			writeFile(t, peer, fmt.Sprintf("peer/n%d.md", i), "peer\n")
			if out, err := gitErr(peer, "add", "-A"); err != nil {
				t.Errorf("peer add: %v\n%s", err, out)
				return
			}
			if out, err := gitErr(peer, "commit", "-q", "-m", fmt.Sprintf("peer %d", i)); err != nil {
				t.Errorf("peer commit: %v\n%s", err, out)
				return
			}
			for try := 0; try < 5; try++ {
				out, err := gitErr(peer, "push", "-q", "origin", "HEAD:main")
				seeBroken("git push", out)
				if err == nil {
					h, _ := gitErr(peer, "rev-parse", "HEAD")
					ack("git push", h)
					break
				}
				out, err = gitErr(peer, "pull", "-q", "--rebase", "origin", "main")
				seeBroken("git pull", out)
				if err != nil {
					_, _ = gitErr(peer, "rebase", "--abort")
				}
			}
		}
	}()
	go func() { // memfsd
		defer sides.Done()
		for i := range turns {
			rel := fmt.Sprintf("ours/n%d.md", i)
			// Some size, so that storing the pack takes a few milliseconds:
			// the window between go-git's old-value check and its write.
			writeFile(t, r.Dir, rel, randomText(t, 64<<10))
			if _, err := r.CommitWrite([]string{rel}, "memory: create "+rel); err != nil {
				t.Errorf("commit %s: %v", rel, err)
				return
			}
			res, err := r.Reconcile(ctx)
			if err != nil {
				seeBroken("memfsd", err.Error())
				t.Logf("turn %d: memfsd sync (its commit waits for the next turn): %v", i, err)
				continue
			}
			ack("memfsd", res.Head.String())
		}
	}()
	sides.Wait()
	close(stop)
	bg.Wait()

	if packs == 0 {
		t.Fatal("no git maintenance ran beside the pushes")
	}
	for i, b := range broken {
		if i == 5 {
			t.Errorf("… %d broken reads in all", len(broken))
			break
		}
		t.Errorf("read a broken ref: %s", b)
	}
	lost := 0
	for h, who := range acked {
		if _, err := gitErr(bare, "merge-base", "--is-ancestor", h, "refs/heads/main"); err != nil {
			lost++
			_, e := gitErr(bare, "cat-file", "-e", h)
			t.Errorf("%s was told %s landed; it is not on main (present: %v)", who, h[:7], e == nil)
		}
	}
	if out, err := gitErr(bare, "fsck", "--strict", "--no-progress"); err != nil {
		t.Errorf("git fsck on the embedded remote: %v\n%s", err, out)
	}
	// A push's .keep lasts until its ref moved, no longer: a pack kept
	// for good would never be repacked.
	if keeps, _ := filepath.Glob(filepath.Join(bare, "objects", "pack", "*.keep")); len(keeps) > 0 {
		t.Errorf("packs left kept after the pushes: %v", keeps)
	}
	t.Logf("%d acknowledged pushes, %d lost; %d maintenance runs and %d loose ref reads beside them", len(acked), lost, packs, reads)
}

// randomText is n bytes of hex that do not compress.
func randomText(tb testing.TB, n int) string {
	tb.Helper()
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}
