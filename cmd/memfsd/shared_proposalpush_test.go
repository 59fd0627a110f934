package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// A shared remote that refuses pushes must not hold a proposing agent up:
// the tool answers at once (the proposal is pushed later), and each turn
// tries the pending proposals once, not under the whole retry budget.
// Once the remote takes pushes again, the next turn pushes them.
func TestShared_ProposalPushNeverHoldsUpTheAgent(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	p := startDaemon(t, srv, t.TempDir(), "--agent", "w1", "--agent", "w2", "--retry-budget", "20s", "--retry-max", "2s")
	// w1 first: its URL becomes the shared repository's remote.
	for _, a := range [][2]string{{"w1", "allow"}, {"w2", "propose"}} {
		id, w := a[0], a[1]
		if code, err := p.adminCall("PUT", "/v1/agents/"+id+"/shared/team", `{"write":"`+w+`"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach %s: %d %v", id, code, err)
		}
	}
	if out, isErr := p.sharedTool("w1", "team", `{"command":"create","path":"/memories/plan.md","file_text":"step one\n"}`); isErr {
		t.Fatal(out)
	}
	p.turn("w1")

	// Only the shared repository's pack uploads: the proposals (the
	// agents' own memories and the shared main have nothing to push).
	refusing := srv.FailNext("POST /v1/git/w1/repositories/team.git/git-receive-pack", 1<<20, 503)
	start := time.Now()
	out, isErr := p.sharedTool("w2", "team", `{"command":"create","path":"/memories/idea.md","file_text":"an idea\n"}`)
	took := time.Since(start)
	if isErr || !strings.Contains(out, "push failed for now") {
		t.Fatalf("w2's proposal while pushes are refused: %v %s", isErr, out)
	}
	if took > 5*time.Second {
		t.Fatalf("the proposing tool call took %v: it waited on the refusing remote", took)
	}
	start = time.Now()
	p.turn("w2")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("w2's turn took %v with a proposal pending: it backed off on the refusing remote", took)
	}
	bare := srv.SharedRepoDir("team")
	if got := git(t, bare, "for-each-ref", "refs/heads/proposals/"); got != "" {
		t.Fatalf("a proposal reached the remote while it refused pushes: %s", got)
	}

	srv.ClearFaults()
	_ = refusing
	p.turn("w2")
	waitFor(t, 20*time.Second, "the pending proposal pushed", func() bool {
		return strings.Contains(git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposals/"), "proposals/w2/")
	})
}
