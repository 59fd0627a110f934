package gitmem_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// Each write lands as one small pack and its index, which git reads (fsck,
// verify-pack, cat-file), with no loose object and no .keep left once the
// write's ref has moved.
func TestRepo_WritePacks(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "wp")
	before := packCount(t, r.Dir)
	commitN(t, r, 0, 5)
	if n := looseCount(t, r.Dir); n != 0 {
		t.Fatalf("%d loose objects after 5 writes", n)
	}
	if n := packCount(t, r.Dir) - before; n != 5 {
		t.Fatalf("%d new packs for 5 writes", n)
	}
	keeps, _ := filepath.Glob(filepath.Join(r.GitDir, "objects", "pack", "*.keep"))
	if len(keeps) != 0 {
		t.Fatalf(".keep files left after the writes: %v", keeps)
	}
	packs, _ := filepath.Glob(filepath.Join(r.GitDir, "objects", "pack", "*.idx"))
	for _, p := range packs {
		git(t, r.Dir, "verify-pack", p)
	}
	git(t, r.Dir, "fsck", "--strict")
	if got := git(t, r.Dir, "show", "HEAD:notes/n0004.md"); got != "note 4" {
		t.Fatalf("HEAD:notes/n0004.md = %q", got)
	}
	if st := git(t, r.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status: %q", st)
	}
	// memfsd reads its own recent packs back and pushes from them.
	if _, err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := git(t, srv.RepoDir("wp"), "rev-list", "--count", "main"); n != "5" {
		t.Fatalf("the remote has %s commits, want 5", n)
	}
}

// A sync's replayed commits are in a pack no ref reaches until the branch
// moves; a person's `git repack -a -d` at that moment (it drops packed
// objects no ref reaches) must leave that pack alone: its .keep says so.
func TestRepo_WritePackKeptUntilBranchMoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := gitserver.New(t, testToken)
	const agent = "kept"
	r := mustClone(t, srv, agent)
	seed(t, r)
	commitFile(t, r, "notes/mine.md", "mine\n", "memory: create notes/mine.md")
	peerPush(t, srv, agent, "notes/peer.md", "theirs\n", "peer: notes")
	repacked := 0
	gitmem.SetBeforeMove(r, func() {
		keeps, _ := filepath.Glob(filepath.Join(r.GitDir, "objects", "pack", "*.keep"))
		if len(keeps) == 0 {
			t.Errorf("no .keep while the replayed commit waits for the branch")
		}
		git(t, r.Dir, "repack", "-a", "-d", "-q")
		repacked++
	})
	res, err := r.Reconcile(ctx)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if repacked == 0 || res.Replayed == 0 {
		t.Fatalf("the replay did not happen: %+v, repacked %d", res, repacked)
	}
	git(t, r.Dir, "fsck", "--strict")
	for _, p := range []string{"notes/mine.md", "notes/peer.md"} {
		git(t, r.Dir, "cat-file", "-e", "HEAD:"+p)
	}
	if keeps, _ := filepath.Glob(filepath.Join(r.GitDir, "objects", "pack", "*.keep")); len(keeps) != 0 {
		t.Fatalf(".keep files left after the sync: %v", keeps)
	}
}

// A crash leaves a write's .keep (Open removes it, not a person's), maybe
// a temporary file in .git (removed once an hour old), and may leave a
// pack without its index (git skips it; go-git would fail every
// lookup on it): the repo opens and works.
func TestRepo_WritePackCrashLeftovers(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "left")
	commitN(t, r, 0, 3)
	dir := r.Dir
	r.Close()
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	idx, _ := filepath.Glob(filepath.Join(packDir, "*.idx"))
	if len(idx) < 2 {
		t.Fatal("no packs")
	}
	ours := strings.TrimSuffix(idx[0], ".idx") + ".keep"
	theirs := strings.TrimSuffix(idx[1], ".idx") + ".keep"
	os.WriteFile(ours, []byte("memfsd: until the ref that needs it moves\n"), 0o444)
	os.WriteFile(theirs, []byte("a person's\n"), 0o644)
	orphan := filepath.Join(packDir, "pack-"+strings.Repeat("ab", 20)+".pack")
	os.WriteFile(orphan, []byte("PACK torn by a crash"), 0o444)
	// An interrupted atomic write in .git (a shared index's temporary
	// file): an old one goes, a fresh one (someone's write in progress)
	// stays.
	oldTmp, freshTmp := filepath.Join(dir, ".git", ".memfsd-tmp-1"), filepath.Join(dir, ".git", ".memfsd-tmp-2")
	os.WriteFile(oldTmp, []byte("half a shared index"), 0o644)
	os.WriteFile(freshTmp, []byte("being written"), 0o644)
	hours := time.Now().Add(-2 * time.Hour)
	os.Chtimes(oldTmp, hours, hours)
	r2, err := gitmem.Open(dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := os.Stat(ours); !os.IsNotExist(err) {
		t.Fatalf("a crash's .keep stayed: %v", err)
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Fatalf("a person's .keep went: %v", err)
	}
	if _, err := os.Stat(oldTmp); !os.IsNotExist(err) {
		t.Fatalf("an old temporary file in .git stayed: %v", err)
	}
	if _, err := os.Stat(freshTmp); err != nil {
		t.Fatalf("a fresh temporary file in .git went: %v", err)
	}
	if _, err := r2.Status(); err != nil {
		t.Fatalf("status beside a pack without its index: %v", err)
	}
	commitN(t, r2, 3, 2)
	if _, _, err := r2.HeadFiles(); err != nil {
		t.Fatal(err)
	}
	os.Remove(orphan)
	git(t, dir, "fsck", "--strict")
}
