package main_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestShared_FirstProposalBeforeFirstPush: a proposal made while the
// shared repository's first commits have not reached its remote yet (the
// remote refuses pushes for now) goes on top of the local tip, not as a
// root commit (issue 28: "a proposal made before the shared repository's
// first push is a root commit the README's plain git merge refuses"). Once
// the remote takes pushes, an operator's clone merges it with plain git.
func TestShared_FirstProposalBeforeFirstPush(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	p := startDaemon(t, srv, t.TempDir(), "--agent", "f1", "--agent", "f2", "--retry-budget", "2s", "--retry-max", "500ms")
	srv.FailNext("POST /v1/git/f1/repositories/team.git/git-receive-pack", 1<<20, 503)
	for _, a := range [][2]string{{"f1", "allow"}, {"f2", "propose"}} {
		if code, err := p.adminCall("PUT", "/v1/agents/"+a[0]+"/shared/team", `{"write":"`+a[1]+`"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach %s: %d %v", a[0], code, err)
		}
	}
	if out, isErr := p.sharedTool("f1", "team", `{"command":"create","path":"/memories/plan.md","file_text":"step one\n"}`); isErr {
		t.Fatal(out)
	}
	p.turn("f1") // the shared push is refused: plan.md stays local
	bare := srv.SharedRepoDir("team")
	if got, _ := gitTry(bare, "rev-parse", "--verify", "-q", "refs/heads/main"); got != "" {
		t.Fatalf("the shared main reached the remote while it refused pushes: %s", got)
	}
	if out, isErr := p.sharedTool("f2", "team", `{"command":"create","path":"/memories/idea.md","file_text":"an idea\n"}`); isErr {
		t.Fatal(out)
	}

	srv.ClearFaults()
	waitFor(t, 30*time.Second, "the shared main and the proposal on the remote", func() bool {
		p.turn("f1")
		p.turn("f2")
		_, err := gitTry(bare, "rev-parse", "--verify", "-q", "refs/heads/main")
		return err == nil && strings.Contains(git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposals/"), "proposals/f2/")
	})
	branch := strings.Fields(git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposals/f2/"))[0]
	if parents := strings.Fields(git(t, bare, "log", "-1", "--format=%P", branch)); len(parents) != 1 {
		t.Fatalf("the proposal %s has %d parents (a root commit: based on no tip), want 1", branch, len(parents))
	}
	// The operator's plain git merge.
	op := filepath.Join(t.TempDir(), "op")
	git(t, filepath.Dir(op), "clone", "-q", strings.Replace(srv.SharedURL("f1", "team"), "http://", "http://memfsd:"+token+"@", 1), op)
	git(t, op, "-c", "user.name=op", "-c", "user.email=op@x", "merge", "-q", "--no-edit", "origin/"+branch)
	for _, f := range []string{"plan.md", "idea.md"} {
		if _, err := gitTry(op, "cat-file", "-e", "HEAD:"+f); err != nil {
			t.Fatalf("after the merge %s is missing", f)
		}
	}
}
