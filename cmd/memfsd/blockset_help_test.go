package main_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestBlockSet_HelpAndStdin: `memfsd block set --help` says what it
// changes, which blocks, where the text comes from, how front matter is
// taken and who the commit's author is (issue 28: the help contradicted the
// README on front matter); `--file -` reads the text from standard input,
// through the daemon, and the commit is the operator's.
func TestBlockSet_HelpAndStdin(t *testing.T) {
	t.Parallel()
	help, err := exec.Command(binPath, "block", "set", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("block set --help: %v\n%s", err, help)
	}
	for _, want := range []string{
		"system/persona.md", "system/human.md", "read-only",
		"--file F", "standard input with --file -",
		"keeps the block's front matter from HEAD", "replaces\nthe whole block",
		"operator identity", "--operator-name", "memfsd-operator",
		"admin socket", "Exit 0",
	} {
		if !strings.Contains(string(help), want) {
			t.Errorf("block set --help lacks %q:\n%s", want, help)
		}
	}

	srv := gitserver.New(t, token)
	home := t.TempDir()
	startDaemon(t, srv, home, "--agent", "bs")
	const body = "Persona from a pipe.\n"
	cmd := exec.Command(binPath, "block", "set", "persona", "--agent", "bs", "--file", "-", "--home", home)
	cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("block set --file -: %v\n%s", err, out)
	}
	got := git(t, srv.RepoDir("bs"), "show", "main:system/persona.md")
	if !strings.HasSuffix(got+"\n", "---\n"+body) || !strings.Contains(got, "read_only: true") {
		t.Fatalf("remote persona = %q, want HEAD's front matter and %q", got, body)
	}
	if log := git(t, srv.RepoDir("bs"), "log", "-1", "--format=%an %s", "main"); log != "memfsd-operator memfsd: operator set system/persona.md" {
		t.Fatalf("remote's last commit %q, want the operator's", log)
	}
}
