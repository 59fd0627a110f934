package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestShared_DetachedViewMovedAside: an agent's view folder of a shared
// repository the operator detaches is moved aside to
// shared/<name>@detached-<stamp> with its files (nothing lost), and the
// agent is told once
// (shared_detached, naming folders as it sees them, no host path). Before
// (issue 28), the folder kept the shared files and took the agent's writes
// to nowhere without a word. An attach again makes the view anew from the
// shared tip (the shared files are not taken as deleted); a view found at
// start with no attachment (detached while no daemon ran) is moved aside
// too.
func TestShared_DetachedViewMovedAside(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "dv")
	attach := func(p *proc) {
		t.Helper()
		if code, err := p.adminCall("PUT", "/v1/agents/dv/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach: %d %v", code, err)
		}
	}
	view := filepath.Join(home, "agents", "dv", "shared", "team")
	attach(p)
	if out, isErr := p.sharedTool("dv", "team", `{"command":"create","path":"/memories/plan.md","file_text":"step one\n"}`); isErr {
		t.Fatal(out)
	}
	waitFor(t, 30*time.Second, "plan.md in the view", func() bool {
		_, err := os.Stat(filepath.Join(view, "plan.md"))
		return err == nil
	})
	p.turn("dv")

	detach := func(p *proc) {
		t.Helper()
		if code, err := p.adminCall("DELETE", "/v1/agents/dv/shared/team", "", nil); err != nil || code/100 != 2 {
			t.Fatalf("detach: %d %v", code, err)
		}
	}
	detach(p)
	movedAside := func() string {
		t.Helper()
		if _, err := os.Stat(view); err == nil {
			t.Fatalf("the view folder is still there after the detach")
		}
		m, _ := filepath.Glob(view + "@detached-*")
		if len(m) != 1 {
			t.Fatalf("moved-aside folders %v, want 1", m)
		}
		if data, err := os.ReadFile(filepath.Join(m[0], "plan.md")); err != nil || string(data) != "step one\n" {
			t.Fatalf("the moved-aside folder lost plan.md: %q %v", data, err)
		}
		return m[0]
	}
	aside := movedAside()
	told := func(p *proc, want string) {
		t.Helper()
		var out struct {
			Reminders []struct{ Kind, Text string } `json:"reminders"`
		}
		if code, err := p.get("/v1/agents/dv/reminders", &out); err != nil || code != 200 {
			t.Fatalf("reminders: %d %v", code, err)
		}
		n := 0
		for _, r := range out.Reminders {
			if r.Kind != "shared_detached" {
				continue
			}
			n++
			if !strings.Contains(r.Text, "shared/"+filepath.Base(want)) || !strings.Contains(r.Text, "shared/team ") || strings.Contains(r.Text, home) {
				t.Fatalf("shared_detached reminder %q: want it to name shared/team and shared/%s, no host path", r.Text, filepath.Base(want))
			}
		}
		if want != "" && n != 1 {
			t.Fatalf("%d shared_detached reminders, want 1: %+v", n, out.Reminders)
		}
		if want == "" && n != 0 {
			t.Fatalf("shared_detached told again: %+v", out.Reminders)
		}
	}
	told(p, aside)
	told(p, "")

	// Attached again: a new view from the shared tip; plan.md stays on
	// the shared branch.
	attach(p)
	waitFor(t, 30*time.Second, "plan.md in the new view", func() bool {
		_, err := os.Stat(filepath.Join(view, "plan.md"))
		return err == nil
	})
	p.turn("dv")
	if got := git(t, srv.SharedRepoDir("team"), "show", "main:plan.md"); got != "step one" {
		t.Fatalf("shared plan.md = %q after the attach again", got)
	}

	// Detached while no daemon runs: moved aside at the next start.
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, srv, home, "shared", "detach", "team", "--agent", "dv"); code != 0 {
		t.Fatalf("offline detach: %d %s", code, out)
	}
	os.RemoveAll(aside)
	p = startDaemon(t, srv, home, "--agent", "dv")
	told(p, movedAside())
}
