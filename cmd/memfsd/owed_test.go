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
	PushRetry *struct {
		NextAt time.Time `json:"next_at"`
		Tries  int       `json:"tries"`
	} `json:"push_retry"`
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

// failPushes makes the remote (its own, one agent's) answer 503 to the
// next n requests of a push (memfsd's one-request POST, or the
// receive-pack advertisement): the push fails a few times, then the
// server recovers by itself.
func failPushes(srv *gitserver.Server, n int) *gitserver.Fault {
	return srv.FailNext("git-receive-pack", n, http.StatusServiceUnavailable)
}

// pushFailures is more 503s than one sync's retries take (--retry-budget
// 300ms, --retry-max 50ms: about 10): only retries after the sync gave up
// reach the recovered server.
const pushFailures = 40

// A write answered through the API or MCP, whose push failed, reaches the
// remote with no further call once the server recovers: the failed push
// is retried in the background with backoff, and the status shows it
// (class, next step, push_retry) until then. Without the background retry
// nothing pushes until the next turn or tool call: the write stays local.
func TestOwed_AnsweredWritePushedWithoutAnotherCall(t *testing.T) {
	t.Parallel()
	for _, route := range []string{"api", "mcp"} {
		t.Run(route, func(t *testing.T) {
			t.Parallel()
			srv := gitserver.New(t, token)
			home := t.TempDir()
			id := "owed" + route
			p := startDaemon(t, srv, home, "--agent", id, "--mcp-push-idle", "200ms",
				"--retry-initial", "10ms", "--retry-max", "50ms", "--retry-budget", "300ms")
			fault := failPushes(srv, pushFailures)
			switch route {
			case "api":
				var res struct {
					IsError bool `json:"is_error"`
				}
				body := `{"command":"create","path":"/memories/owed.md","file_text":"an answered write\n"}`
				if code, err := p.call("POST", "/v1/agents/"+id+"/memory", body, &res); err != nil || code != 200 || res.IsError {
					t.Fatalf("write: %d %v %+v", code, err, res)
				}
				// The turn the agent's client asks for: its push fails.
				if tr := p.turn(id); tr.Outcome == "pushed" {
					t.Fatalf("turn pushed through the outage: %+v", tr)
				}
			case "mcp":
				cs, err := mcpSocket(t, agentSock(home, id))
				if err != nil {
					t.Fatal(err)
				}
				if text, isErr := mcpCall(t, cs, "memory", map[string]any{"command": "create", "path": "/memories/owed.md", "file_text": "an answered write\n"}); isErr {
					t.Fatalf("create: %s", text)
				}
				// No call after it: the idle push runs, and fails.
			}
			// The status says the push failed, its class and next step,
			// and that it is retried in the background.
			seen := false
			waitFor(t, 20*time.Second, "the write on the remote, with no further call", func() bool {
				if !seen {
					if st := p.owedStatus(id); st.LastError != nil && st.PushRetry != nil {
						if st.LastError.Class != "retryable" || !strings.Contains(st.LastError.NextStep, "background") || st.PushRetry.Tries < 1 {
							t.Fatalf("status during the outage: %+v %+v", *st.LastError, *st.PushRetry)
						}
						seen = true
					}
				}
				out, err := gitTry(srv.RepoDir(id), "show", "main:owed.md")
				return err == nil && out == "an answered write"
			})
			if n := fault.Hits.Load(); n != pushFailures {
				t.Fatalf("the remote answered 503 %d times, want %d: the outage did not outlast one sync's retries", n, pushFailures)
			}
			if !seen {
				t.Error("the status never showed the background retry (push_retry) during the outage")
			}
			waitFor(t, 10*time.Second, "the status clear", func() bool {
				st := p.owedStatus(id)
				return st.LastError == nil && st.PushRetry == nil
			})
			if l, r := localHead(t, home, id), remoteMain(srv, id); l != r {
				t.Fatalf("local %s, remote %s", l, r)
			}
		})
	}
}

// An operator's `block set` made during an outage stays pending; the
// agent's shell then drops it: resets its branch past the commit (`git
// reset --hard HEAD~1`), or commits its own persona over it. The change is
// still owed: the next sync commits it again and pushes it, the status
// says it is pending and why until then, and the remote's tip ends with
// the operator's persona. Without that, the next push is clean (after the
// reset) or puts the remote's old persona back (after the commit over it),
// and the change never reaches the remote.
func TestOwed_BlockSetLostByAgentIsAppliedAgain(t *testing.T) {
	t.Parallel()
	for _, drop := range []string{"reset", "commit"} {
		t.Run(drop, func(t *testing.T) {
			t.Parallel()
			owedBlockSet(t, drop)
		})
	}
}

func owedBlockSet(t *testing.T, drop string) {
	srv := gitserver.New(t, token)
	home := t.TempDir()
	id := "owedblock" + drop
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
	// The agent's shell drops the operator's change.
	if subject := git(t, dir, "log", "-1", "--format=%s"); !strings.Contains(subject, "operator set system/persona.md") {
		t.Fatalf("HEAD is %q, want the operator's commit", subject)
	}
	personaFile := filepath.Join(dir, "system", "persona.md")
	switch drop {
	case "reset":
		git(t, dir, "reset", "-q", "--hard", "HEAD~1")
	case "commit":
		os.WriteFile(personaFile, []byte("---\ndescription: the agent's own persona\nread_only: true\n---\nI am the agent's.\n"), 0o600)
		git(t, dir, "commit", "-q", "-am", "the persona I like better")
	}
	// (The background retry, running during the outage, may commit the
	// operator's persona again at once: the file is not looked at here.)
	st := p.owedStatus(id)
	if len(st.BlockSetsPending) != 1 || st.BlockSetsPending[0].Path != "system/persona.md" || st.BlockSetsPending[0].Reason == "" {
		t.Fatalf("block_sets_pending after the agent's %s = %+v", drop, st.BlockSetsPending)
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
	// (After the agent's commit over it, a push may have put the remote's
	// persona back first, when the commit landed during a sync's attempt.)
	if !strings.Contains(log, "operator set system/persona.md again") || drop == "reset" && strings.Contains(log, "restore read-only") {
		t.Fatalf("remote log:\n%s", log)
	}
	if got, _ := os.ReadFile(personaFile); string(got) != persona {
		t.Fatalf("local persona = %q", got)
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

// An operator's block set that reached the remote, then changed there by
// another clone (the operator's own git, as SPEC §8 allows): the agent
// pulls the new version, and nothing is owed. The delivered approval must
// not be taken for one the agent's history lost: the old persona is never
// committed again over the new one (nor then "restored" as a read-only
// change the agent made).
func TestOwed_DeliveredBlockSetChangedOnRemoteNotAppliedAgain(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	id := "owedthenchanged"
	p := startDaemon(t, srv, home, "--agent", id, "--debounce", "10s",
		"--retry-initial", "10ms", "--retry-max", "50ms", "--retry-budget", "300ms")
	dir := memDir(home, id)
	bare := srv.RepoDir(id)
	const persona = "---\ndescription: the operator's persona\nread_only: true\n---\nFirst version.\n"
	f := filepath.Join(t.TempDir(), "persona.md")
	os.WriteFile(f, []byte(persona), 0o600)
	if code, out := runCLI(t, srv, home, "block", "set", "persona", "--agent", id, "--file", f); code != 0 {
		t.Fatalf("block set: exit %d: %s", code, out)
	}
	if got := git(t, bare, "show", "main:system/persona.md") + "\n"; got != persona {
		t.Fatalf("remote persona after the block set = %q", got)
	}
	// The operator changes the persona from another clone.
	const newer = "---\ndescription: the operator's persona\nread_only: true\n---\nSecond version, from another clone.\n"
	other := t.TempDir()
	git(t, other, "clone", "-q", bare, ".")
	os.WriteFile(filepath.Join(other, "system", "persona.md"), []byte(newer), 0o600)
	git(t, other, "-c", "user.name=op", "-c", "user.email=op@x", "commit", "-q", "-am", "operator: persona, second version")
	git(t, other, "push", "-q", "origin", "HEAD:main")

	for range 3 {
		p.turn(id)
	}
	if got := git(t, bare, "show", "main:system/persona.md") + "\n"; got != newer {
		t.Fatalf("remote persona = %q, want the operator's second version", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "system", "persona.md")); string(got) != newer {
		t.Fatalf("local persona = %q, want the operator's second version", got)
	}
	if log := git(t, bare, "log", "--format=%s", "main"); strings.Contains(log, "again") || strings.Contains(log, "restore read-only") {
		t.Fatalf("the delivered block set was applied again over the newer persona; remote log:\n%s", log)
	}
	if st := p.owedStatus(id); len(st.BlockSetsPending) != 0 {
		t.Fatalf("block_sets_pending = %+v, want none", st.BlockSetsPending)
	}
}
