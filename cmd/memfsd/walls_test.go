package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Walls between agents (issue 27): one agent's .git is input its shell
// can write. Whatever lies there (a ref that points at itself, a FIFO
// where git keeps a file), the daemon stays up, every answer about any
// agent comes within 2 s, the other agent's writes still reach its
// remote, and SIGTERM ends the process within --shutdown-timeout.

// answerBound is how long an answer about one agent may take.
const answerBound = 2 * time.Second

// timedGet GETs path on the agent API with a hard bound of answerBound
// (plus a little for the race detector) and reports how long it took.
func (p *proc) timedGet(path string, out any) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), answerBound+time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://memfsd"+path, nil)
	start := time.Now()
	resp, err := p.api.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil {
		return resp.StatusCode, took, err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, took, fmt.Errorf("decode %s: %v", data, err)
		}
	}
	return resp.StatusCode, took, nil
}

// answersInTime checks the status of each agent and the agents' list
// answer within answerBound.
func (p *proc) answersInTime(t *testing.T, ids ...string) map[string]status {
	t.Helper()
	out := map[string]status{}
	for _, id := range ids {
		var st status
		code, took, err := p.timedGet("/v1/agents/"+id+"/status", &st)
		if err != nil || code != 200 || took > answerBound {
			t.Fatalf("status of %s: %d after %s (want 200 within %s): %v", id, code, took.Round(time.Millisecond), answerBound, err)
		}
		out[id] = st
	}
	var list struct {
		Agents []status `json:"agents"`
	}
	if code, took, err := p.timedGet("/v1/agents", &list); err != nil || code != 200 || took > answerBound || len(list.Agents) != len(ids) {
		t.Fatalf("GET /v1/agents: %d after %s, %d agents (want 200 within %s, %d agents): %v", code, took.Round(time.Millisecond), len(list.Agents), answerBound, len(ids), err)
	}
	return out
}

// kickTurn asks for a sync of id without waiting long for it (the sync
// reaches the agent's .git; its answer may be "delayed").
func (p *proc) kickTurn(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerBound+time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://memfsd/v1/agents/"+id+"/turn?wait=1s", nil)
	if resp, err := p.api.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// writeAndPush writes a file through id's memory tool, turns, and waits
// until the remote has it.
func (p *proc) writeAndPush(t *testing.T, srv *gitserver.Server, id, name, text string) {
	t.Helper()
	if out, isErr := p.memory(id, fmt.Sprintf(`{"command":"create","path":"/memories/%s","file_text":%q}`, name, text)); isErr {
		t.Fatalf("write %s for %s: %s", name, id, out)
	}
	waitFor(t, 15*time.Second, id+"'s "+name+" on its remote", func() bool {
		p.kickTurn(t, id)
		got, err := gitTry(srv.RepoDir(id), "show", "main:"+name)
		return err == nil && got == strings.TrimSpace(text)
	})
}

// rssMiB is the process's resident memory.
func rssMiB(pid int) int { return procStatusMiB(pid, "VmRSS:") }

// procStatusMiB is one "key: N kB" line of /proc/<pid>/status in MiB (-1
// when it cannot be read).
func procStatusMiB(pid int, key string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb / 1024
		}
	}
	return -1
}

// A ref that points at itself in agent a's folder: before, ReadRef
// recursed until the stack overflowed and took the whole daemon (agent b
// included) down, and a's status never answered. Now a's status answers
// at once in the error state with the ref named and a next step, b's
// writes reach its remote, and the daemon stays up.
//
// The long form (the daemon stays up 60 s with RSS < 256 MiB while
// b writes) runs with MEMFSD_SOAK=1; the suite keeps a short check that
// still fails on the bug (a's status hangs, then the process dies).
func TestWalls_RefSelfLoopStaysWithTheAgent(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "a", "--agent", "b")
	ref := filepath.Join(memDir(home, "a"), ".git", "refs", "heads", "main")
	if err := os.WriteFile(ref, []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.kickTurn(t, "a")

	sts := p.answersInTime(t, "a", "b")
	a := sts["a"]
	var le struct {
		Message  string `json:"message"`
		NextStep string `json:"next_step"`
	}
	if a.State != "error" || json.Unmarshal(a.LastError, &le) != nil || !strings.Contains(le.Message, "refs/heads/main") || le.NextStep == "" {
		t.Fatalf("a's status = %s, last error %s; want error naming refs/heads/main with a next step", a.State, a.LastError)
	}
	if !strings.Contains(le.Message, "symbolic ref") {
		t.Errorf("a's error does not say it is a loop of symbolic refs: %s", le.Message)
	}

	p.writeAndPush(t, srv, "b", "b-1.md", "b's first\n")
	deadline := time.Now().Add(3 * time.Second)
	if os.Getenv("MEMFSD_SOAK") == "1" {
		deadline = time.Now().Add(60 * time.Second)
	}
	for i := 2; time.Now().Before(deadline); i++ {
		p.kickTurn(t, "a")
		p.answersInTime(t, "a", "b")
		p.writeAndPush(t, srv, "b", fmt.Sprintf("b-%d.md", i), fmt.Sprintf("b's write %d\n", i))
		if rss := rssMiB(p.cmd.Process.Pid); rss > 256 {
			t.Fatalf("daemon RSS %d MiB > 256 MiB", rss)
		}
	}
	if p.cmd.ProcessState != nil || syscall.Kill(p.cmd.Process.Pid, 0) != nil {
		t.Fatalf("the daemon exited:\n%s", p.logs.String())
	}
	if code, err := p.get("/healthz", nil); err != nil || code != 200 {
		t.Fatalf("healthz: %d %v", code, err)
	}
}

// A FIFO where git keeps HEAD, a loose ref, packed-refs or the index in
// agent a's folder: before, a read of it blocked forever (status and the
// agents' list never answered, SIGTERM did not stop the daemon). Now every
// agent's status answers within 2 s, b still pushes, and SIGTERM exits
// within --shutdown-timeout + 2 s.
func TestWalls_FIFOInGitDirNeverHangs(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{"HEAD", "refs/remotes/origin/main", "packed-refs", "index"} {
		t.Run(strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
			t.Parallel()
			srv := gitserver.New(t, token)
			home := t.TempDir()
			const shutdown = 3 * time.Second
			p := startDaemon(t, srv, home, "--agent", "a", "--agent", "b", "--shutdown-timeout", shutdown.String())
			gitDir := filepath.Join(memDir(home, "a"), ".git")
			if rel == "packed-refs" {
				// As after `git pack-refs --all`: the remote-tracking ref
				// is read from packed-refs, not from a loose file.
				if err := os.Remove(filepath.Join(gitDir, "refs", "remotes", "origin", "main")); err != nil {
					t.Fatal(err)
				}
			}
			fifo := filepath.Join(gitDir, filepath.FromSlash(rel))
			os.Remove(fifo)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			// A direct write makes a commit (HEAD, the branch, the index)
			// and the turn a sync (the remote-tracking ref).
			if err := os.WriteFile(filepath.Join(memDir(home, "a"), "a-direct.md"), []byte("written by a's shell\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p.kickTurn(t, "a")
			p.answersInTime(t, "a", "b")
			p.writeAndPush(t, srv, "b", "b.md", "b goes on\n")
			p.kickTurn(t, "a")
			sts := p.answersInTime(t, "a", "b")
			if sts["b"].State == "error" {
				t.Errorf("b is in the error state: %s", sts["b"].LastError)
			}

			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- p.stop(syscall.SIGTERM) }()
			select {
			case <-done:
			case <-time.After(shutdown + 2*time.Second):
				t.Fatalf("still running %s after SIGTERM with --shutdown-timeout %s", time.Since(start).Round(time.Millisecond), shutdown)
			}
		})
	}
}
