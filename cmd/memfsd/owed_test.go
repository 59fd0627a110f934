package main_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// An answered write and an operator's change are owed until a push
// carries them (SPEC §13, issue 38).

// owedStatus is the part of an agent's status these tests read.
type owedStatus struct {
	LastError *struct {
		Class    string `json:"class"`
		NextStep string `json:"next_step"`
	} `json:"last_error"`
	BlockSetsPending []struct {
		Path   string `json:"path"`
		Reason string `json:"reason"`
	} `json:"block_sets_pending"`
}

func (p *proc) owedStatus(id string) owedStatus {
	p.t.Helper()
	var st owedStatus
	if code, err := p.get("/v1/agents/"+id+"/status", &st); err != nil || code != 200 {
		p.t.Fatalf("status %s: %d %v", id, code, err)
	}
	return st
}

// An operator's `block set` made during an outage stays pending; the
// agent's shell then resets its branch past the commit (`git reset --hard
// HEAD~1`). The change is still owed: the next sync commits it again and
// pushes it, the status says it is pending and why until then, and the
// remote's tip ends with the operator's persona. Without that, the next
// push is clean and the change never reaches the remote.
func TestOwed_BlockSetLostByAgentResetIsAppliedAgain(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	const id = "owedblock"
	p := startDaemon(t, srv, home, "--agent", id, "--debounce", "10s",
		"--retry-initial", "10ms", "--retry-max", "50ms", "--retry-budget", "300ms")
	dir := memDir(home, id)
	bare := srv.RepoDir(id)
	before := git(t, bare, "show", "main:system/persona.md")
	const persona = "---\ndescription: the operator's persona, set during an outage\nread_only: true\n---\nI am owed.\n"

	// The remote is down: every push is refused.
	down := srv.AddFault(&gitserver.Fault{Match: "git-receive-pack", Count: -1, Status: http.StatusServiceUnavailable})
	f := filepath.Join(t.TempDir(), "persona.md")
	os.WriteFile(f, []byte(persona), 0o600)
	code, out := runCLI(t, srv, home, "block", "set", "persona", "--agent", id, "--file", f)
	if code == 0 || !strings.Contains(out, "not on the remote yet") {
		t.Fatalf("block set during the outage: exit %d: %s", code, out)
	}
	if down.Hits.Load() == 0 {
		t.Fatal("the block set's push never reached the remote")
	}
	// The agent's shell drops the operator's commit.
	if subject := git(t, dir, "log", "-1", "--format=%s"); !strings.Contains(subject, "operator set system/persona.md") {
		t.Fatalf("HEAD is %q, want the operator's commit", subject)
	}
	git(t, dir, "reset", "-q", "--hard", "HEAD~1")
	if got, _ := os.ReadFile(filepath.Join(dir, "system", "persona.md")); string(got) == persona {
		t.Fatal("the reset kept the operator's persona")
	}
	st := p.owedStatus(id)
	if len(st.BlockSetsPending) != 1 || st.BlockSetsPending[0].Path != "system/persona.md" || st.BlockSetsPending[0].Reason == "" {
		t.Fatalf("block_sets_pending after the reset = %+v", st.BlockSetsPending)
	}

	// The remote comes back; a turn (or the background retry) syncs.
	srv.ClearFaults()
	tr := p.turn(id)
	waitFor(t, 20*time.Second, "the operator's persona on the remote", func() bool {
		got, err := gitTry(bare, "show", "main:system/persona.md")
		return err == nil && got+"\n" == persona
	})
	if got := git(t, bare, "show", "main:system/persona.md") + "\n"; got == before+"\n" {
		t.Fatalf("remote persona unchanged (turn %+v)", tr)
	}
	log := git(t, bare, "log", "--format=%s", "main")
	if !strings.Contains(log, "operator set system/persona.md again") || strings.Contains(log, "restore read-only") {
		t.Fatalf("remote log:\n%s", log)
	}
	// Delivered: the status clears, and a turn after it changes nothing.
	waitFor(t, 10*time.Second, "block_sets_pending cleared", func() bool {
		return len(p.owedStatus(id).BlockSetsPending) == 0
	})
	if tr := p.turn(id); tr.Outcome != "clean" {
		t.Fatalf("turn after the delivery = %+v", tr)
	}
	if got := git(t, bare, "show", "main:system/persona.md") + "\n"; got != persona {
		t.Fatalf("remote persona after the last turn = %q", got)
	}
}
