package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestRun_OneDaemonPerHome: a second `memfsd run` on a home a daemon
// already runs on exits 1 at once, naming the first one's pid, the home
// and what to do, and touches nothing (the first keeps its sockets and
// agents; issue 28: the second started and managed the same agents). Once
// the first is killed (-9: the kernel lets go of the lock) a new one starts.
func TestRun_OneDaemonPerHome(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "one")

	// Its own sockets: only the home is shared (before, the default
	// sockets' clash was all that stopped a second daemon).
	socks := t.TempDir()
	second := exec.Command(binPath, "run", "--home", home, "--base-url", srv.URL, "--agent", "one", "--agent", "two",
		"--listen", "unix://"+filepath.Join(socks, "b.sock"), "--admin-listen", "unix://"+filepath.Join(socks, "b-admin.sock"))
	second.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	var out bytes.Buffer
	second.Stdout, second.Stderr = &out, &out
	start := time.Now()
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if second.ProcessState.ExitCode() != 1 {
			t.Fatalf("second run: %v, want exit 1:\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		second.Process.Kill()
		<-done
		t.Fatalf("second run on the same home still running after 10 s:\n%s", out.String())
	}
	t.Logf("second run refused in %s", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{fmt.Sprintf("memfsd pid %d", p.cmd.Process.Pid), home, filepath.Join(home, "memfsd.lock"), "one daemon per home", "--home"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("second run's message lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(home, "agents", "two")); err == nil {
		t.Errorf("the refused daemon made agent two")
	}
	// The first still answers on its socket and syncs.
	writeAndTurn(t, p, []string{"one"}, "after-second.md", "pushed")

	p.stop(syscall.SIGKILL)
	p2 := startDaemon(t, srv, home, "--agent", "one")
	writeAndTurn(t, p2, []string{"one"}, "after-restart.md", "pushed")
}
