package main_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestShared_NotMirroredAsAnAgent: --mirror-template is per agent. A
// shared repository's unit is an Agent whose ID is the repository's name,
// so it must not take the template (or the per-agent mirror-url of an
// agent of that name): that would copy the shared repository into the
// mirror of agent <name> (another agent's repository, or one nobody asked
// for).
func TestShared_NotMirroredAsAnAgent(t *testing.T) {
	t.Parallel()
	primary, mirror := gitserver.New(t, token), gitserver.New(t, "")
	mirror.RepoDir("team") // a repository there, as a host would have one for an agent "team"
	home := t.TempDir()
	p := startDaemon(t, primary, home, "--agent", "a1",
		"--mirror-template", mirror.URL+"/v1/git/{agent}/state.git", "--retry-initial", "50ms", "--retry-max", "400ms")
	if code, err := p.adminCall("PUT", "/v1/agents/a1/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
		t.Fatalf("attach: %d %v", code, err)
	}
	waitFor(t, 30*time.Second, "shared clone", func() bool {
		_, err := os.Stat(filepath.Join(home, "shared", "team", "memory", ".git"))
		return err == nil
	})
	if out, isErr := p.sharedTool("a1", "team", `{"command":"create","path":"/memories/plan.md","file_text":"shared plan\n"}`); isErr {
		t.Fatal(out)
	}
	if tr := p.turn("a1"); tr.Outcome == "failed" {
		t.Fatalf("turn: %+v", tr)
	}
	// a1's own mirror catches up (the loops have run after the turn).
	waitFor(t, 30*time.Second, "a1's mirror", func() bool {
		m := p.mirror("a1").Mirror
		return m != nil && m.State == "synced" && m.Pending == 0
	})
	time.Sleep(2 * time.Second) // a mirror loop kicked by the turn has pushed by now
	if n := mirror.RequestsMatching("/v1/git/team/"); n > 0 {
		out, _ := gitTry(mirror.RepoDir("team"), "log", "--format=%an %s", "main")
		t.Fatalf("the shared repository's unit pushed to the mirror of an agent named team (%d requests); its main:\n%s", n, out)
	}
}
