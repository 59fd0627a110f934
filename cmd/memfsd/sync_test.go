package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// runSync runs `memfsd sync` and returns its exit code, stdout and stderr.
func runSync(t *testing.T, srv *gitserver.Server, home, tok string, extra ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"sync", "--agent", "cli", "--home", home, "--base-url", srv.URL,
		"--retry-initial", "10ms", "--retry-max", "20ms", "--retry-budget", "100ms"}, extra...)...)
	cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+tok)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

func TestSync_ExitCodes(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	if code, out, errOut := runSync(t, srv, home, token); code != 0 {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, errOut)
	}
	dir := memDir(home, "cli")
	os.WriteFile(filepath.Join(dir, "n.md"), []byte("base\n"), 0o600)
	runSync(t, srv, home, token)

	// A conflicting edit from elsewhere: exit 3 and the copy is listed.
	peer := peerClone(t, srv, "cli")
	os.WriteFile(filepath.Join(peer, "n.md"), []byte("theirs\n"), 0o644)
	git(t, peer, "commit", "-qam", "peer")
	git(t, peer, "push", "-q")
	os.WriteFile(filepath.Join(dir, "n.md"), []byte("mine\n"), 0o600)
	code, out, _ := runSync(t, srv, home, token)
	if code != 3 || !strings.Contains(out, "n.conflict-") {
		t.Fatalf("conflict sync: exit %d, %q", code, out)
	}

	// A wrong token: exit 1, class auth and the next step on stderr, the
	// token nowhere.
	bad := "not-the-token-5551212"
	os.WriteFile(filepath.Join(dir, "m.md"), []byte("x\n"), 0o600)
	code, out, errOut := runSync(t, srv, home, bad)
	if code != 1 || !strings.Contains(errOut, "class=auth") || !strings.Contains(errOut, "next step:") {
		t.Fatalf("wrong token: exit %d\n%s", code, errOut)
	}
	if strings.Contains(out+errOut, bad) {
		t.Fatal("token printed")
	}
	// Bad input changes nothing.
	if code, _, errOut := runSync(t, srv, home, token, "--agent", "../x"); code != 1 || !strings.Contains(errOut, "bad agent id") {
		t.Fatalf("bad id: exit %d %s", code, errOut)
	}
}
