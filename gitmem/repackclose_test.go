package gitmem_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// repackGoroutines returns the stacks of goroutines started by the
// repack's pack writing (its encoder and indexer), or "". With working,
// only those still at work (in go-git's encoder or memfsd's indexer), not
// one that has done its work and is on its way out.
func repackGoroutines(working bool) string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "gitstore.WriteDeltaPack") {
			continue
		}
		if working && !strings.Contains(g, "packfile.") && !strings.Contains(g, "pack.IndexAt") {
			continue
		}
		out = append(out, g)
	}
	return strings.Join(out, "\n\n")
}

// openUnder lists this process's open files under dir.
func openUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var out []string
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// Close during a repack cancels it and returns only once the repack's
// goroutines (go-git's encoder, which cannot be stopped mid-delta-search,
// and the indexer) have ended and closed the repository's files; nothing
// is lost.
// Not parallel: it reads every goroutine's stack, and another test's
// repack would look like this one's.
func TestRepo_CloseWaitsForRepack(t *testing.T) {
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "repack-close")
	base := strings.Repeat("a line of a note that many notes share, with some words in it\n", 60)
	for i := 0; i < 3000; i++ {
		writeFile(t, r.Dir, fmt.Sprintf("notes/%02d/n%04d.md", i%30, i), fmt.Sprintf("%snote %d\n%s", base[:i%len(base)], i, base))
	}
	git(t, r.Dir, "add", "notes")
	git(t, r.Dir, "commit", "-q", "-m", "3000 notes")

	repacked := make(chan error, 1)
	go func() {
		_, err := r.Repack(context.Background(), 1)
		repacked <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); repackGoroutines(true) == ""; time.Sleep(time.Millisecond) {
		select {
		case err := <-repacked:
			t.Fatalf("the repack ended (%v) before its encoder was seen: make the repo bigger", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the repack's encoder never started")
		}
	}
	began := time.Now()
	r.Close()
	took := time.Since(began)
	if g := repackGoroutines(true); g != "" {
		t.Fatalf("Close returned (after %s) with the repack's goroutines at work:\n%s", took, g)
	}
	if open := openUnder(t, r.GitDir); len(open) > 0 {
		t.Fatalf("files in .git still open after Close: %v", open)
	}
	// A goroutine that has signalled its end may still be returning.
	for deadline := time.Now().Add(time.Second); repackGoroutines(false) != ""; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the repack's goroutines outlived Close:\n%s", repackGoroutines(false))
		}
	}
	select {
	case err := <-repacked:
		if err == nil {
			t.Log("the repack finished before Close cancelled it")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Repack did not return after Close")
	}
	t.Logf("Close took %s", took)
	git(t, r.Dir, "fsck", "--strict")
	checkClean(t, r.Dir)
}
