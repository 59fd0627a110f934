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

// TestRun_SecondSignal: a second SIGTERM within 2 s of the first (a
// supervisor's duplicate) is ignored and the final push ends on the remote
// (issue 28: two SIGTERMs close together aborted it); one sent later still
// aborts a push that hangs, at once, not at --shutdown-timeout.
func TestRun_SecondSignal(t *testing.T) {
	t.Parallel()
	t.Run("WithinTwoSecondsIgnored", func(t *testing.T) {
		t.Parallel()
		srv := gitserver.New(t, token)
		home := t.TempDir()
		p := startDaemon(t, srv, home, "--agent", "sg", "--debounce", "30s", "--shutdown-timeout", "60s")
		os.WriteFile(filepath.Join(memDir(home, "sg"), "last-words.md"), []byte("pushed at shutdown\n"), 0o600)
		// The final push takes a second and a half at the remote.
		f := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/sg/state.git/git-receive-pack", Count: 1, Delay: 1500 * time.Millisecond})
		first := time.Now()
		p.cmd.Process.Signal(syscall.SIGTERM)
		waitFor(t, 10*time.Second, "the final push at the remote", func() bool { return f.Hits.Load() > 0 })
		p.cmd.Process.Signal(syscall.SIGTERM)
		if d := time.Since(first); d >= 2*time.Second {
			t.Skipf("the push reached the remote %s after the first signal: too late for this check", d)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("exit: %v", err)
		}
		if got, err := gitTry(srv.RepoDir("sg"), "show", "main:last-words.md"); err != nil || got != "pushed at shutdown" {
			t.Fatalf("the final push did not reach the remote: %q %v", got, err)
		}
		if !strings.Contains(p.logs.String(), "signal ignored: it came within 2 s of the first") || strings.Contains(p.logs.String(), "aborting the final push") {
			t.Fatalf("the log does not say the second signal was ignored:\n%s", p.logs.String())
		}
	})
	t.Run("LaterOneAborts", func(t *testing.T) {
		t.Parallel()
		srv := gitserver.New(t, token)
		home := t.TempDir()
		p := startDaemon(t, srv, home, "--agent", "sl", "--debounce", "30s", "--shutdown-timeout", "60s")
		os.WriteFile(filepath.Join(memDir(home, "sl"), "stays-local.md"), []byte("committed, not pushed\n"), 0o600)
		f := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/sl/state.git/git-receive-pack", Count: -1, Hang: true})
		defer f.Release()
		first := time.Now()
		p.cmd.Process.Signal(syscall.SIGTERM)
		waitFor(t, 10*time.Second, "the final push at the remote", func() bool { return f.Hits.Load() > 0 })
		time.Sleep(time.Until(first.Add(2500 * time.Millisecond)))
		p.cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan error, 1)
		go func() { exited <- p.cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Fatalf("a second signal 2.5 s after the first did not abort the hanging push within 15 s")
		}
		if !strings.Contains(p.logs.String(), "second signal: aborting the final push") {
			t.Fatalf("the log does not say the push was aborted:\n%s", p.logs.String())
		}
		if out := git(t, memDir(home, "sl"), "log", "-1", "--format=%s"); !strings.Contains(out, "stays-local.md") {
			t.Fatalf("the write is not committed locally: last commit %q", out)
		}
	})
}
