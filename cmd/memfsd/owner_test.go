package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

// Scenarios of one owner per agent: nothing local waits on the network,
// readiness follows the work tree, held state lives on disk.

// within fails the test when f takes longer than d: a bound on a stall,
// not a speed goal.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took := time.Since(start); took > d {
		t.Fatalf("%s took %s while a sync waited on a silent remote (want < %s)", what, took, d)
	}
}

func TestRun_SilentRemoteStallsNothingLocal(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "sil")
	dir := memDir(home, "sil")

	// From now on the remote accepts every request and says nothing.
	silent := srv.AddFault(&gitserver.Fault{Match: "/v1/git/sil/", Count: -1, Hang: true})
	var tr turnResult
	within(t, 3*time.Second, "turn?wait=1s", func() {
		if code, err := p.call("POST", "/v1/agents/sil/turn?wait=1s", "", &tr); err != nil || code != 200 {
			t.Fatalf("turn: %d %v", code, err)
		}
	})
	if tr.Outcome != "delayed" {
		t.Fatalf("turn against a silent remote = %+v, want delayed", tr)
	}
	waitFor(t, 10*time.Second, "the sync waiting on the remote", func() bool { return silent.Hits.Load() > 0 })

	within(t, time.Second, "memory create", func() {
		if out, isErr := p.memory("sil", `{"command":"create","path":"/memories/tool.md","file_text":"by the tool\n"}`); isErr {
			t.Fatalf("create: %s", out)
		}
	})
	before := commitCount(t, dir, "HEAD")
	within(t, 2*time.Second, "a direct write's commit", func() {
		os.WriteFile(filepath.Join(dir, "direct.md"), []byte("written straight\n"), 0o600)
		waitFor(t, 2*time.Second, "direct write committed", func() bool { return commitCount(t, dir, "HEAD") == before+1 })
	})
	for _, path := range []string{"/v1/agents", "/metrics", "/v1/agents/sil/reminders", "/v1/agents/sil/status", "/healthz"} {
		within(t, time.Second, "GET "+path, func() {
			if code, err := p.get(path, nil); err != nil || code != 200 {
				t.Fatalf("GET %s: %d %v", path, code, err)
			}
		})
	}

	// The remote answers again: the next turn pushes every write.
	srv.ClearFaults()
	silent.Release()
	tr = p.turn("sil")
	if tr.Status.Ahead != 0 {
		t.Fatalf("turn after the remote came back = %+v", tr)
	}
	for _, f := range []string{"tool.md", "direct.md"} {
		if out := git(t, srv.RepoDir("sil"), "ls-tree", "--name-only", "main", f); out != f {
			t.Fatalf("%s not on the remote after the remote came back", f)
		}
	}
}

// Start-up with the remote down: every agent is watched at once, healthy
// within seconds, degraded with a reminder, and memory writes work.
func TestRun_RemoteDownAtStartHundredAgents(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	var args []string
	n := soak.Int(25, 100)
	for i := 0; i < n; i++ {
		args = append(args, "--agent", fmt.Sprintf("down-%03d", i))
	}
	p := startDaemon(t, srv, home, args...)
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	srv.AddFault(&gitserver.Fault{Count: -1, Status: 503})

	start := time.Now()
	p = launchDaemon(t, srv, home, args...)
	p.waitHealthy(10 * time.Second)
	t.Logf("healthy %s after start with the remote down", time.Since(start))
	lastID := fmt.Sprintf("down-%03d", n-1)
	last := memDir(home, lastID)
	before := commitCount(t, last, "HEAD")
	os.WriteFile(filepath.Join(last, "early.md"), []byte("written during start-up\n"), 0o600)
	waitFor(t, 2*time.Second, "the last agent's write committed", func() bool { return commitCount(t, last, "HEAD") == before+1 })

	if out, isErr := p.memory(lastID, `{"command":"create","path":"/memories/tool.md","file_text":"works offline\n"}`); isErr {
		t.Fatalf("memory create with the remote down: %s", out)
	}
	waitFor(t, 10*time.Second, "first agent degraded", func() bool { return p.status("down-000").State == "degraded" })
	if r := p.reminders("down-000"); !r.has("sync_delayed") {
		t.Fatalf("reminders with the remote down = %+v", r)
	}
}

// A mass delete held by the daemon is accepted by `memfsd sync` in another
// process (through the daemon's admin socket; refused beside it without
// one): the daemon's next turn reports no hold and pushes nothing more.
func TestRun_AcceptDeletesFromAnotherProcess(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "memory-42", srv.RepoDir("acc"))
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "acc")
	dir := memDir(home, "acc")
	for i := 0; i < 40; i++ {
		os.Remove(filepath.Join(dir, fmt.Sprintf("notes/n%02d.md", i)))
	}
	waitFor(t, 10*time.Second, "deletions held", func() bool { return len(p.status("acc").HeldDeletes) == 40 })
	if r := p.reminders("acc"); !r.has("mass_delete_held") {
		t.Fatalf("reminders = %+v", r)
	}

	// --admin-listen elsewhere: this process does not find the daemon's
	// admin socket, and never works on the repository itself beside the
	// daemon (issue 39): refused, naming the daemon and what to give.
	cmd := exec.Command(binPath, "sync", "--agent", "acc", "--accept-deletes", "--home", home, "--base-url", srv.URL,
		"--admin-listen", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
	cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), fmt.Sprintf("memfsd pid %d", p.cmd.Process.Pid)) ||
		!strings.Contains(string(out), "--admin-listen") {
		t.Fatalf("memfsd sync --accept-deletes beside the daemon, its admin socket not given: %v\n%s", err, out)
	}
	if st := p.status("acc"); len(st.HeldDeletes) != 40 {
		t.Fatalf("the refused accept changed the hold: %+v", st)
	}
	// From another process through the daemon's admin socket.
	cmd = exec.Command(binPath, "sync", "--agent", "acc", "--accept-deletes", "--home", home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("memfsd sync --accept-deletes: %v\n%s", err, out)
	}
	tr := p.turn("acc")
	if len(tr.Status.HeldDeletes) != 0 || tr.Status.State == "error" {
		t.Fatalf("daemon's turn after the accept = %+v", tr)
	}
	if r := p.reminders("acc"); r.has("mass_delete_held") {
		t.Fatalf("mass_delete_held still shown: %+v", r)
	}
	if out := git(t, srv.RepoDir("acc"), "ls-tree", "-r", "--name-only", "main"); strings.Contains(out, "notes/") {
		t.Fatalf("deletions not on the remote:\n%s", out)
	}
}

// An agent never cloned keeps the daemon unready (memfsd health exits 1)
// until its first clone succeeds; a turn retries it.
func TestRun_NeverClonedStaysUnready(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	srv.AddFault(&gitserver.Fault{Count: -1, Status: 503})
	home := t.TempDir()
	p := launchDaemon(t, srv, home, "--agent", "new", "--retry-budget", "300ms")
	health := func() int {
		cmd := exec.Command(binPath, "health", "--home", home)
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode()
			}
			t.Fatal(err)
		}
		return 0
	}
	waitFor(t, 10*time.Second, "the first clone failed", func() bool {
		var st status
		code, _ := p.get("/v1/agents/new/status", &st)
		return code == 200 && string(st.LastError) != "null"
	})
	if code, _ := p.get("/healthz", nil); code != 503 {
		t.Fatalf("healthz with an agent never cloned = %d, want 503", code)
	}
	if code := health(); code != 1 {
		t.Fatalf("memfsd health = %d, want 1", code)
	}
	srv.ClearFaults()
	if tr := p.turn("new"); tr.Outcome == "failed" {
		t.Fatalf("turn after the remote came back = %+v", tr)
	}
	p.waitHealthy(10 * time.Second)
	if code := health(); code != 0 {
		t.Fatalf("memfsd health = %d, want 0", code)
	}
}
