package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestShared_ProposalsNeverDroppedUnpushed: w3's proposal, which the
// shared remote refuses, neither blocks w2's (each proposal's retries are
// its own) nor falls out of the record when w2 makes 201 more (trimming
// drops only pushed proposals); once the remote takes it, it is pushed.
func TestShared_ProposalsNeverDroppedUnpushed(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("sh", "-c", "find "+home+" -name proposals.json | xargs cat").CombinedOutput()
			t.Logf("records: %s", out)
		}
	})
	p := startDaemon(t, srv, home, "--agent", "w1", "--agent", "w2", "--agent", "w3", "--retry-max", "1s")
	for _, a := range [][2]string{{"w1", "allow"}, {"w2", "propose"}, {"w3", "propose"}} {
		if code, err := p.adminCall("PUT", "/v1/agents/"+a[0]+"/shared/team", `{"write":"`+a[1]+`"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach %s: %d %v", a[0], code, err)
		}
	}
	if out, isErr := p.sharedTool("w1", "team", `{"command":"create","path":"/memories/plan.md","file_text":"step one\n"}`); isErr {
		t.Fatal(out)
	}
	p.turn("w1")

	// The shared remote refuses every proposal while flags/all exists and
	// w3's while flags/w3 exists.
	bare := srv.SharedRepoDir("team")
	flags := t.TempDir()
	for _, f := range []string{"all", "w3"} {
		if err := os.WriteFile(filepath.Join(flags, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hook := fmt.Sprintf(`#!/bin/sh
while read old new ref; do
	case "$ref" in
	refs/heads/proposals/*) [ -e %[1]s/all ] && { echo "refused for now"; exit 1; } ;;
	esac
	case "$ref" in
	refs/heads/proposals/w3/*) [ -e %[1]s/w3 ] && { echo "w3 refused"; exit 1; } ;;
	esac
done
exit 0
`, flags)
	if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	onRemote := func(who string) int {
		return len(strings.Fields(git(t, bare, "for-each-ref", "--format=%(refname)", "refs/heads/proposals/"+who+"/")))
	}

	// w3's proposal first (the oldest), then w2's: both refused.
	for _, id := range []string{"w3", "w2"} {
		out, isErr := p.sharedTool(id, "team", `{"command":"create","path":"/memories/`+id+`.md","file_text":"from `+id+`\n"}`)
		if isErr || !strings.Contains(out, "push failed for now") {
			t.Fatalf("%s's proposal while the remote refuses: %v %s", id, isErr, out)
		}
	}
	// The remote takes w2's again: the next sync pushes it, whatever
	// w3's (older, still refused) does.
	os.Remove(filepath.Join(flags, "all"))
	waitFor(t, 10*time.Second, "w2's pending proposal pushed past w3's refused one", func() bool {
		p.turn("w2")
		return onRemote("w2") == 1
	})

	// 200 more by w2, each pushed at once (four callers at a time, as
	// parallel tool calls): 201 pushed in the record.
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < 200; i += 4 {
				var res struct {
					Content string `json:"content"`
					IsError bool   `json:"is_error"`
				}
				in := fmt.Sprintf(`{"command":"create","path":"/memories/n%03d.md","file_text":"n\n"}`, i)
				code, err := p.call("POST", "/v1/agents/w2/memory?shared=team", in, &res)
				if err != nil || code != 200 || res.IsError || strings.Contains(res.Content, "push failed") {
					errs <- fmt.Sprintf("w2's proposal %d: %d %v %s", i, code, err, res.Content)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if got := onRemote("w2"); got != 201 {
		t.Fatalf("w2's proposals on the remote: %d, want 201", got)
	}

	// w3's proposal, still owed, is pushed once the remote takes it.
	os.Remove(filepath.Join(flags, "w3"))
	waitFor(t, 10*time.Second, "w3's proposal pushed after 201 of w2's", func() bool {
		p.turn("w3")
		return onRemote("w3") == 1
	})
}
