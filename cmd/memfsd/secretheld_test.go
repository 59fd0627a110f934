package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/fakesecret"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// A file the secret guard holds is a failed sync, not a WARN in the log:
// memfsd sync pushes the files beside it, then exits 1 naming the file,
// the rule and how the operator releases it — with no daemon and through
// a running daemon's turn. The status table says it too.
func TestSecretHeld_SyncExitsOneAndSaysHowToRelease(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	if code, out := runCLI(t, srv, home, "sync", "--agent", "sh1"); code != 0 {
		t.Fatalf("first sync: %d %s", code, out)
	}
	dir := memDir(home, "sh1")
	os.WriteFile(filepath.Join(dir, "deploy.md"), []byte("server notes\n"+fakesecret.Ed25519(t)), 0o600)
	os.WriteFile(filepath.Join(dir, "ok.md"), []byte("ok\n"), 0o600)
	says := func(what, out string, file string) {
		t.Helper()
		for _, want := range []string{file, "credential", "--no-secret-guard sync --agent sh1"} {
			if !strings.Contains(out, want) {
				t.Fatalf("%s does not say %q:\n%s", what, want, out)
			}
		}
	}
	code, out := runCLI(t, srv, home, "sync", "--agent", "sh1")
	if code != 1 {
		t.Fatalf("sync with a held secret: exit %d, want 1:\n%s", code, out)
	}
	says("sync", out, "/memories/deploy.md (private key block)")
	peer := peerClone(t, srv, "sh1")
	if _, err := os.Stat(filepath.Join(peer, "ok.md")); err != nil {
		t.Fatalf("ok.md not pushed beside the held file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(peer, "deploy.md")); err == nil {
		t.Fatal("deploy.md pushed")
	}
	_, out = runCLI(t, srv, home, "status", "--agent", "sh1")
	says("status", out, "secret_held: deploy.md [private key block]")

	// Through a running daemon: its turn, the same exit and words.
	p := startDaemon(t, srv, home, "--agent", "sh1")
	waitFor(t, 10*time.Second, "the daemon up", func() bool {
		_, out := runCLI(t, srv, home, "status", "--agent", "sh1")
		return strings.Contains(out, "secret_held")
	})
	code, out = runCLI(t, srv, home, "sync", "--agent", "sh1")
	if code != 1 || !strings.Contains(out, "through the daemon") {
		t.Fatalf("sync through the daemon with a held secret: exit %d, want 1:\n%s", code, out)
	}
	says("sync through the daemon", out, "/memories/deploy.md (private key block)")
	if r := p.reminders("sh1"); !r.has("secret_held") || !strings.Contains(r.Text, "operator") {
		t.Fatalf("reminders = %+v", r)
	}

	// The operator's release, as the output says: no daemon, the guard
	// off for one sync.
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, srv, home, "--no-secret-guard", "sync", "--agent", "sh1"); code != 0 {
		t.Fatalf("the operator's release: exit %d:\n%s", code, out)
	}
	peer = peerClone(t, srv, "sh1")
	if _, err := os.Stat(filepath.Join(peer, "deploy.md")); err != nil {
		t.Fatalf("deploy.md not pushed once released: %v", err)
	}
}
