package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestRun_KilledThenOneShotBesideRestartedDaemon: after a kill -9 and a
// restart, a one-shot `memfsd sync` beside the daemon (which
// docs/operator.md, The daemon, allows) must not use or remove the daemon's spare lock files: every
// tool write during and after it is committed (issue 27: "take
// .git/index.lock: open spare file: ... no such file").
func TestRun_KilledThenOneShotBesideRestartedDaemon(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "k")
	write := func(p *proc, name string) error {
		var res struct {
			Content string `json:"content"`
			IsError bool   `json:"is_error"`
		}
		in := fmt.Sprintf(`{"command":"create","path":"/memories/%s.md","file_text":"%s\n"}`, name, name)
		if code, err := p.call("POST", "/v1/agents/k/memory", in, &res); err != nil || code != 200 || res.IsError {
			return fmt.Errorf("write %s: %d %v %s", name, code, err, res.Content)
		}
		return nil
	}
	// Enough commits for a pool of spare files (a commit takes about
	// seven; the pool starts after 16), then a kill -9.
	for i := range 8 {
		if err := write(p, fmt.Sprintf("a%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if p.cmd.Process.Kill() != nil || p.cmd.Wait() == nil {
		t.Fatal("the daemon did not die")
	}
	spares, _ := os.ReadDir(filepath.Join(memDir(home, "k"), ".git", "memfsd", "spare"))
	if len(spares) == 0 {
		t.Fatal("the killed daemon left no spare files: the scenario needs them")
	}

	p = startDaemon(t, srv, home, "--agent", "k")
	peer := peerClone(t, srv, "k")
	for round := range 2 {
		// The peer moves the remote, so the one-shot has refs to update.
		os.WriteFile(filepath.Join(peer, fmt.Sprintf("peer%d.md", round)), []byte("peer\n"), 0o600)
		git(t, peer, "add", "-A")
		git(t, peer, "commit", "-qm", "peer")
		git(t, peer, "pull", "-q", "--rebase")
		git(t, peer, "push", "-q")

		done := make(chan error, 1)
		go func() {
			var err error
			for i := 0; i < 6 && err == nil; i++ {
				err = write(p, fmt.Sprintf("b%d-%02d", round, i))
			}
			done <- err
		}()
		code, out := runCLI(t, srv, home, "sync", "--agent", "k")
		if code != 0 {
			t.Errorf("round %d, the one-shot sync beside the daemon: %d %s", round, code, out)
		}
		if err := <-done; err != nil {
			t.Fatalf("round %d, beside the one-shot: %v", round, err)
		}
		for i := range 6 {
			if err := write(p, fmt.Sprintf("c%d-%02d", round, i)); err != nil {
				t.Fatalf("round %d, after the one-shot: %v", round, err)
			}
		}
	}
	if strings.Contains(p.logs.String(), "open spare file") {
		t.Fatal("the daemon failed to open its spare files")
	}
}
