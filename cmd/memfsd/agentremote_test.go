package main_test

import (
	"context"
	"errors"
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

// cliEnv runs the binary with args, stdin and extra environment, and
// returns its exit code and combined output.
func cliEnv(t *testing.T, env []string, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestAgentRemote_OneShotsBesideTheDaemon (issue 39): with `memfsd run
// --base-url URL` on a home, the one-shot commands given only --home never
// push the agents' memory anywhere else. Before, `sync` pushed a managed
// agent's whole history to a new embedded remote under <home>/remote,
// `block set` of an agent the daemon does not manage answered "pushed"
// (there too), and `mcp` made a new agent on it. Now a managed agent's
// sync is the daemon's turn (on its remote); for an agent the daemon does
// not manage each command refuses, naming the daemon and the command to
// run; nothing is made under <home>/remote.
func TestAgentRemote_OneShotsBesideTheDaemon(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	tok := []string{"MEMFSD_TOKEN=" + token}
	// a2 is cloned from the server first, by a one-shot with the flag.
	if code, out := cliEnv(t, tok, "", "sync", "--agent", "a2", "--home", home, "--base-url", srv.URL); code != 0 {
		t.Fatalf("first sync of a2: %d %s", code, out)
	}
	p := startDaemon(t, srv, home, "--agent", "a1")
	pid := fmt.Sprint(p.cmd.Process.Pid)
	embedded := filepath.Join(home, "remote")

	// A managed agent: the sync is the daemon's turn, on the server.
	os.WriteFile(filepath.Join(memDir(home, "a1"), "n.md"), []byte("through the daemon\n"), 0o600)
	code, out := cliEnv(t, nil, "", "sync", "--agent", "a1", "--home", home)
	if code != 0 || !strings.Contains(out, "through the daemon") {
		t.Fatalf("sync of a managed agent: %d %s", code, out)
	}
	if got := git(t, srv.RepoDir("a1"), "show", "main:n.md"); got != "through the daemon" {
		t.Fatalf("n.md on the server = %q", got)
	}

	// An agent the daemon does not manage: refused, naming the daemon and
	// the next step; nothing written, nothing pushed anywhere.
	before := git(t, srv.RepoDir("a2"), "rev-parse", "main")
	os.WriteFile(filepath.Join(memDir(home, "a2"), "m.md"), []byte("not pushed elsewhere\n"), 0o600)
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{"sync", "--agent", "a2"}},
		{"I am the new persona.\n", []string{"block", "set", "persona", "--agent", "a2", "--file", "-"}},
		{`{"command":"create","path":"/memories/x.md","file_text":"x\n"}`, []string{"memory", "--agent", "a2"}},
		{"", []string{"mcp", "--agent", "a4"}},
	} {
		code, out := cliEnv(t, nil, c.stdin, append(c.args, "--home", home)...)
		if code == 0 || !strings.Contains(out, "memfsd pid "+pid) || !strings.Contains(out, "does not manage agent") ||
			!strings.Contains(out, "PUT http://memfsd/v1/agents/") {
			t.Errorf("%s beside the daemon: %d %s", strings.Join(c.args, " "), code, out)
		}
	}
	if _, err := os.Stat(embedded); err == nil {
		t.Errorf("an embedded remote was made under %s", embedded)
	}
	if _, err := os.Stat(filepath.Join(home, "agents", "a4")); err == nil {
		t.Errorf("mcp made agent a4 beside the daemon")
	}
	if after := git(t, srv.RepoDir("a2"), "rev-parse", "main"); after != before {
		t.Errorf("a2 moved on the server without the daemon: %s → %s", before, after)
	}
	if _, err := os.Stat(filepath.Join(memDir(home, "a2"), "x.md")); err == nil {
		t.Errorf("memory wrote x.md of a2 beside the daemon")
	}

	// The daemon gone, a one-shot given no remote uses the agent's own:
	// a2's commit reaches the server, still no embedded remote.
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	if code, out := cliEnv(t, tok, "", "sync", "--agent", "a2", "--home", home); code != 0 {
		t.Fatalf("sync of a2 after the daemon: %d %s", code, out)
	}
	if got := git(t, srv.RepoDir("a2"), "show", "main:m.md"); got != "not pushed elsewhere" {
		t.Fatalf("m.md on the server = %q", got)
	}
	if _, err := os.Stat(embedded); err == nil {
		t.Errorf("an embedded remote was made under %s", embedded)
	}
}

// TestAgentRemote_FlagThatDisagrees (issue 39): the remote an agent was
// first cloned from is recorded and every command uses it; a flag giving
// another is an error naming both and the next step, with nothing pushed
// or made. An agent cloned before the record existed is judged by its
// repository's origin: the same remote is recorded then, another is an
// error (its .git/config is the agent's: never a reason to send the token
// elsewhere).
func TestAgentRemote_FlagThatDisagrees(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	other := gitserver.New(t, token)
	home := t.TempDir()
	tok := []string{"MEMFSD_TOKEN=" + token}
	if code, out := cliEnv(t, tok, "", "sync", "--agent", "r1", "--home", home, "--base-url", srv.URL); code != 0 {
		t.Fatalf("first sync: %d %s", code, out)
	}
	record := filepath.Join(home, "agents", "r1", "origin-url")
	if got, _ := os.ReadFile(record); strings.TrimSpace(string(got)) != srv.RemoteURL("r1") {
		t.Fatalf("recorded remote = %q, want %q", got, srv.RemoteURL("r1"))
	}
	os.WriteFile(filepath.Join(memDir(home, "r1"), "n.md"), []byte("mine\n"), 0o600)
	for _, args := range [][]string{{"--base-url", other.URL}, {"--remote-template", other.URL + "/m/{agent}.git"}} {
		code, out := cliEnv(t, tok, "", append([]string{"sync", "--agent", "r1", "--home", home}, args...)...)
		if code != 1 || !strings.Contains(out, srv.RemoteURL("r1")) || !strings.Contains(out, other.URL) ||
			!strings.Contains(out, args[0]) || !strings.Contains(out, "drop that flag") {
			t.Errorf("sync %v: %d %s", args, code, out)
		}
	}
	if n := other.Requests(); n != 0 {
		t.Errorf("a flag that disagrees sent %d requests to the other server", n)
	}
	// The daemon too: refused at start, naming both.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := exec.CommandContext(ctx, binPath, "run", "--home", home, "--base-url", other.URL, "--agent", "r1")
	run.Env = append(os.Environ(), tok...)
	runOut, err := run.CombinedOutput()
	if run.ProcessState == nil || run.ProcessState.ExitCode() != 1 || !strings.Contains(string(runOut), srv.RemoteURL("r1")) || !strings.Contains(string(runOut), other.URL) {
		t.Errorf("run with another --base-url: %v\n%s", err, runOut)
	}
	if n := other.Requests(); n != 0 {
		t.Errorf("the daemon sent %d requests to the other server", n)
	}
	// Without a flag: the recorded remote (no embedded one is made).
	if code, out := cliEnv(t, tok, "", "sync", "--agent", "r1", "--home", home); code != 0 {
		t.Fatalf("sync without a flag: %d %s", code, out)
	}
	if got := git(t, srv.RepoDir("r1"), "show", "main:n.md"); got != "mine" {
		t.Fatalf("n.md on the server = %q", got)
	}
	if _, err := os.Stat(filepath.Join(home, "remote")); err == nil {
		t.Errorf("an embedded remote was made")
	}
	// status shows the agent's remote, not the command's default.
	if _, out := cliEnv(t, nil, "", "status", "--agent", "r1", "--home", home, "--json"); !strings.Contains(out, `"remote": "`+srv.RemoteURL("r1")+`"`) {
		t.Errorf("status without a flag: %s", out)
	}

	// Cloned by an older memfsd (no record): its origin decides.
	os.Remove(record)
	code, out := cliEnv(t, tok, "", "sync", "--agent", "r1", "--home", home)
	if code != 1 || !strings.Contains(out, "origin is "+srv.RemoteURL("r1")) || !strings.Contains(out, "embedded remote") {
		t.Errorf("sync of an unrecorded agent with another remote: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(home, "remote")); err == nil {
		t.Errorf("an embedded remote was made for an agent whose origin is another")
	}
	if code, out := cliEnv(t, tok, "", "sync", "--agent", "r1", "--home", home, "--base-url", srv.URL); code != 0 {
		t.Fatalf("sync of an unrecorded agent with its own remote: %d %s", code, out)
	}
	if got, _ := os.ReadFile(record); strings.TrimSpace(string(got)) != srv.RemoteURL("r1") {
		t.Fatalf("recorded remote after the sync = %q", got)
	}
}
