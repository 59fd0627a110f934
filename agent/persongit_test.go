package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
)

// TestAgent_PersonGitWaitIsBounded: a REVERT_HEAD in the folder holds
// commits and syncs (a tool write is answered, its commit deferred with
// its message), for at most PersonGitWait; the same sign never holds
// again, a touched one only after as long again.
func TestAgent_PersonGitWaitIsBounded(t *testing.T) {
	t.Parallel()
	// Long enough that the steps between the end of a wait and the next
	// look (a sync, a git log) stay inside the pause on a loaded machine.
	const wait = 2 * time.Second
	cfg := &agent.Config{Home: t.TempDir(), PersonGitWait: wait}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := open(t, cfg, "pgw")
	if err != nil {
		t.Fatal(err)
	}
	dir := a.Dir()
	ctx := context.Background()
	head := git(t, dir, "rev-parse", "HEAD")
	revertHead := filepath.Join(dir, ".git", "REVERT_HEAD")
	os.WriteFile(revertHead, []byte(head+"\n"), 0o644)
	holding := func() bool {
		st := a.Status(true)
		return st.PersonGitInProgress != nil && st.PersonGitInProgress.Holding
	}
	if !holding() {
		t.Fatalf("REVERT_HEAD not waited on: %+v", a.Status(true).PersonGitInProgress)
	}
	start := time.Now()
	if res, err := a.RunMemory(create("/memories/t.md", "from the tool\n"), ""); err != nil || res.IsError {
		t.Fatalf("tool write: %+v %v", res, err)
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatal("the tool's commit moved HEAD while a person's revert was in progress")
	}
	if _, err := a.Sync(ctx, agent.SyncOptions{}); !errors.Is(err, agent.ErrPersonGitInProgress) {
		t.Fatalf("sync during the wait: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for holding() {
		if time.Now().After(deadline) {
			t.Fatal("still waiting past the bound")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(start); took < wait/2 {
		t.Fatalf("the wait ended after %s, the bound is %s", took, wait)
	}
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatalf("sync after the wait: %v", err)
	}
	if got := git(t, dir, "log", "-1", "--format=%s"); got != "memory: create /memories/t.md" && got != "memory: create t.md" {
		t.Fatalf("the deferred tool commit = %q", got)
	}
	// The same REVERT_HEAD does not hold again; touched at once, neither.
	if holding() {
		t.Fatal("the same sign held again")
	}
	now := time.Now()
	os.Chtimes(revertHead, now, now)
	if holding() {
		t.Fatal("a touched sign held again within the pause after a wait")
	}
	// After the pause, new signs get a wait of their own.
	time.Sleep(wait)
	now = time.Now()
	os.Chtimes(revertHead, now, now)
	if !holding() {
		t.Fatal("a new operation after the pause was not waited on")
	}
	// Removed and made again, over and over: still no longer than the
	// bound.
	start = time.Now()
	for holding() {
		if time.Since(start) > wait+5*time.Second {
			t.Fatal("a sign removed and made again over and over holds memfsd past the bound")
		}
		os.Remove(revertHead)
		holding()
		os.WriteFile(revertHead, []byte(head+"\n"), 0o644)
		time.Sleep(20 * time.Millisecond)
	}
	os.Remove(revertHead)
	if st := a.Status(true); st.PersonGitInProgress != nil {
		t.Fatalf("after the person's operation ended: %+v", st.PersonGitInProgress)
	}
}
