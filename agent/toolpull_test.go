package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/memtool"
)

// A memory-tool call reads a file, then writes it back. A pull that
// replaced the file in between must not be written over: the call's
// commit would silently revert the remote's change. Syncs take the
// tool's lock for their work-file steps (gitmem.Options.WorkLock), so the
// pull waits for the call, then merges the tool's commit with its own.
func TestMemoryTool_PullNeverLandsBetweenReadAndWrite(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	a, b := twoClones(t, srv, "rmw")
	ctx := context.Background()
	write(t, a, "facts.md", "first\nsecond\nthird\n")
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, b, "facts.md", "first (peer)\nsecond\nthird\n")
	if _, err := b.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}

	// Between the tool's read and its write, a sync of a runs; the hook
	// waits for it (or gives it a second when it is held off).
	synced := make(chan error, 1)
	var waited time.Duration
	agent.SetBeforeToolWrite(a, func() {
		go func() {
			_, err := a.Sync(ctx, agent.SyncOptions{SkipScan: true})
			synced <- err
		}()
		start := time.Now()
		select {
		case err := <-synced:
			synced <- err
		case <-time.After(time.Second):
		}
		waited = time.Since(start)
	})
	tool, err := a.MemoryTool()
	if err != nil {
		t.Fatal(err)
	}
	oldStr, newStr := "third", "third (tool)"
	res := tool.Run(memtool.Input{Command: "str_replace", Path: "/memories/facts.md", OldStr: &oldStr, NewStr: &newStr})
	if res.IsError {
		t.Fatalf("str_replace: %s", res.Content)
	}
	agent.SetBeforeToolWrite(a, nil)
	if err := <-synced; err != nil {
		t.Fatalf("sync during the call: %v", err)
	}
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "first (peer)\nsecond\nthird (tool)\n"
	data, err := os.ReadFile(filepath.Join(a.Dir(), "facts.md"))
	if err != nil || string(data) != want {
		t.Fatalf("work file %q (%v), want %q (the sync waited %v inside the call)", data, err, want, waited)
	}
	if got := remoteFile(t, srv, "rmw", "facts.md") + "\n"; got != want {
		t.Fatalf("remote file %q, want %q", got, want)
	}
	// No commit of a's undoes the peer's line.
	log := git(t, srv.RepoDir("rmw"), "log", "-p", "--format=%s", "main", "--", "facts.md")
	if strings.Contains(log, "-first (peer)") {
		t.Fatalf("a commit reverted the peer's line:\n%s", log)
	}
	git(t, srv.RepoDir("rmw"), "fsck", "--strict")
}
