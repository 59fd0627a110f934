package gitmem_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

func looseCount(t *testing.T, dir string) int {
	out := git(t, dir, "count-objects", "-v")
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "count: "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

func packCount(t *testing.T, dir string) int {
	packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return len(packs)
}

func commitN(t testing.TB, r *gitmem.Repo, from, n int) {
	for i := from; i < from+n; i++ {
		p := fmt.Sprintf("notes/n%04d.md", i)
		writeFile(t, r.Dir, p, fmt.Sprintf("note %d\n", i))
		if _, err := r.CommitWrite([]string{p}, "memory: create "+p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRepo_Repack(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "rp")
	commitN(t, r, 0, 100)
	// memfsd writes a small pack per write; a person's git writes loose
	// objects: the repack takes both.
	if looseCount(t, r.Dir) != 0 {
		t.Fatalf("memfsd's commits left %d loose objects", looseCount(t, r.Dir))
	}
	if n := packCount(t, r.Dir); n < 100 {
		t.Fatalf("%d packs after 100 commits, want one per commit", n)
	}
	for i := 0; i < 20; i++ {
		p := filepath.Join(t.TempDir(), "loose")
		os.WriteFile(p, []byte(fmt.Sprintf("a person's object %d\n", i)), 0o600)
		git(t, r.Dir, "hash-object", "-w", p)
	}
	before := looseCount(t, r.Dir)
	res, err := r.Repack(context.Background(), 1)
	if err != nil || res.Packed != before || looseCount(t, r.Dir) != 0 || len(res.Merged) < 100 || packCount(t, r.Dir) != 1 {
		t.Fatalf("repack of %d loose objects and the write packs: %+v %v, %d loose and %d packs left", before, res, err, looseCount(t, r.Dir), packCount(t, r.Dir))
	}
	git(t, r.Dir, "fsck", "--strict")
	if n := git(t, r.Dir, "rev-list", "--count", "HEAD"); n != "100" {
		t.Fatalf("%s commits reachable", n)
	}
	// memfsd reads through the pack: status, more commits, a push.
	if _, err := r.Status(); err != nil {
		t.Fatal(err)
	}
	commitN(t, r, 100, 5)
	if _, err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := git(t, srv.RepoDir("rp"), "rev-list", "--count", "main"); n != "105" {
		t.Fatalf("remote has %s commits", n)
	}
	if res, err := r.Repack(context.Background(), gitmem.DefaultRepackLoose); err != nil || res.Packed != 0 {
		t.Fatalf("below the threshold: %+v %v", res, err)
	}
}

// Repacks racing memfsd's commits and pushes, a person's git gc and `git
// repack -a -d` (which ignores gc.pid): every commit that reported success
// stays reachable, locally and on the remote, fsck clean.
func TestRepo_RepackRacingWritesAndGitGC(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "race")
	commitN(t, r, 0, 10)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(4)
	go func() { // a person repacking everything, gc.pid or not
		defer wg.Done()
		for i := 0; i < 5; i++ {
			gitErr(r.Dir, "repack", "-a", "-d", "-q")
			time.Sleep(15 * time.Millisecond)
		}
	}()
	go func() { // turns
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if _, err := r.Reconcile(context.Background()); err != nil {
				t.Errorf("reconcile: %v", err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := r.Repack(context.Background(), 1); err != nil && !errors.Is(err, gitmem.ErrGCRunning) && !errors.Is(err, gitmem.ErrPacksChanged) {
				t.Errorf("repack: %v", err)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 5; i++ {
			gitErr(r.Dir, "gc", "-q") // refused while a repack holds gc.pid: fine
			time.Sleep(20 * time.Millisecond)
		}
	}()
	commitN(t, r, 10, 150)
	close(stop)
	wg.Wait()
	if _, err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	git(t, r.Dir, "fsck", "--strict")
	if n := git(t, r.Dir, "rev-list", "--count", "HEAD"); n != "160" {
		t.Fatalf("%s commits reachable, want 160", n)
	}
	if n := git(t, srv.RepoDir("race"), "rev-list", "--count", "main"); n != "160" {
		t.Fatalf("the remote has %s commits, want 160", n)
	}
	git(t, srv.RepoDir("race"), "fsck", "--strict")
	if st := git(t, r.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status: %q", st)
	}
}

// A repack killed with SIGKILL at a random moment loses nothing.
func TestRepo_RepackKilled(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("MEMFSD_REPACK_CHILD"); dir != "" {
		r, err := gitmem.Open(dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor})
		if err != nil {
			os.Exit(2)
		}
		for i := 0; ; i++ {
			commitN(t, r, 1000+i*20, 20)
			r.Repack(context.Background(), 1)
		}
	}
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "kill")
	commitN(t, r, 0, 50)
	r.Close()
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRepo_RepackKilled$")
		cmd.Env = append(os.Environ(), "MEMFSD_REPACK_CHILD="+r.Dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(300+round*170) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// The dead repack's gc.pid stays; the next repack sees its process
		// is gone (as git gc does) and goes ahead.
		git(t, r.Dir, "fsck", "--strict")
		// A kill between the branch's move and the index's leaves the
		// last file committed but out of the index ("D " and "??" for the
		// same path; the next scan puts it back,
		// TestRepo_ScanPutsBackAnIndexEntryHEADHas): nothing is lost. A
		// file gone from the work tree would be.
		st := git(t, r.Dir, "status", "--porcelain")
		for _, l := range strings.Split(st, "\n") {
			if p, ok := strings.CutPrefix(l, "D  "); ok && !strings.Contains(st, "?? "+p) || strings.HasPrefix(l, " D") {
				t.Fatalf("round %d: files lost: %q", round, st)
			}
		}
	}
	r2, err := gitmem.Open(r.Dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := r2.Status(); err != nil {
		t.Fatalf("status after the kills: %v", err)
	}
	// What the daemon does at start: commit what is dirty. Then the index
	// matches HEAD again.
	dirty, err := r2.DirtyPaths()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range dirty {
		paths = append(paths, d.Path)
	}
	if len(paths) > 0 {
		if _, err := r2.CommitWrite(paths, "memfsd: after the kills"); err != nil {
			t.Fatal(err)
		}
	}
	if st := git(t, r.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status after the daemon's first commit: %q", st)
	}
	if res, err := r2.Repack(context.Background(), 1); err != nil {
		pid, _ := os.ReadFile(filepath.Join(r.GitDir, "gc.pid"))
		lock, lerr := os.ReadFile(filepath.Join(r.GitDir, "gc.pid.lock"))
		t.Fatalf("repack after the kills: %+v %v (gc.pid %q, gc.pid.lock %q %v)", res, err, pid, lock, lerr)
	}
	git(t, r.Dir, "fsck", "--strict")
}

// TestRepo_RepackGeometric: repack after every few commits of a changing
// tree keeps O(log n) packs, keeps every object (an unreachable one too),
// and with deltas stays within 2x of what `git gc --aggressive` leaves.
func TestRepo_RepackGeometric(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "geo")
	lost := filepath.Join(t.TempDir(), "stray.txt")
	os.WriteFile(lost, []byte("nobody points at me\n"), 0o600)
	unreachable := git(t, r.Dir, "hash-object", "-w", lost)
	rounds, per := soak.Int(10, 24), 15
	for round := 0; round < rounds; round++ {
		for i := 0; i < per; i++ {
			// 40 notes rewritten in turn: trees change on every commit.
			p := fmt.Sprintf("notes/d%d/n%02d.md", i%4, (round*per+i)%40)
			writeFile(t, r.Dir, p, fmt.Sprintf("note %d, round %d\n%s", i, round, strings.Repeat("memory line\n", 20)))
			if _, err := r.CommitWrite([]string{p}, "memory: update "+p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Repack(context.Background(), 1); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// Read every object of the round back through the packs.
		_, files, err := r.HeadFiles()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if _, err := r.Blob(f.Blob); err != nil {
				t.Fatalf("round %d: %s: %v", round, f.Path, err)
			}
		}
	}
	packs, _ := filepath.Glob(filepath.Join(r.GitDir, "objects", "pack", "*.pack"))
	total := 0
	for _, l := range strings.Split(git(t, r.Dir, "count-objects", "-v"), "\n") {
		if v, ok := strings.CutPrefix(l, "in-pack: "); ok {
			total, _ = strconv.Atoi(v)
		}
	}
	if limit := bitsLen(total) + 1; len(packs) > limit {
		t.Fatalf("%d packs for %d objects (want at most %d)", len(packs), total, limit)
	}
	if looseCount(t, r.Dir) != 0 {
		t.Fatalf("%d loose objects left", looseCount(t, r.Dir))
	}
	git(t, r.Dir, "fsck", "--strict")
	git(t, r.Dir, "cat-file", "-e", unreachable)
	// The rolled-up packs were read between rounds; none stays open.
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, r.GitDir+"/") && strings.Contains(target, ".pack") && strings.HasSuffix(target, "(deleted)") {
			t.Fatalf("a removed pack is still open: %s", target)
		}
	}
	if n := git(t, r.Dir, "rev-list", "--count", "HEAD"); n != strconv.Itoa(rounds*per) {
		t.Fatalf("%s commits reachable, want %d", n, rounds*per)
	}
	ours := packBytes(t, r.GitDir)
	cp := filepath.Join(t.TempDir(), "copy")
	git(t, "", "clone", "-q", "--bare", "--no-local", r.Dir, cp)
	git(t, cp, "gc", "-q", "--aggressive", "--prune=now")
	theirs := packBytes(t, cp)
	t.Logf("%d packs, %d objects: %d bytes; git gc --aggressive: %d bytes (%.2fx)", len(packs), total, ours, theirs, float64(ours)/float64(theirs))
	if ours > 2*theirs {
		t.Fatalf("packs take %d bytes, over twice git gc --aggressive's %d", ours, theirs)
	}
}

func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// packBytes is the size of every pack and index in gitDir.
func packBytes(t *testing.T, gitDir string) int64 {
	files, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*"))
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}
