package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestLettaConstraints_EveryRoute (SPEC §9), through the binary: with
// letta-code's .memfs.config.json on the shared remote (letta-code's
// defaults), a depth-3 file is refused by `memfsd memory --dialect
// letta-code` with letta-code's hook output on stdout, a 20,001-character
// direct write is held with a constraints_held reminder, a shell's
// depth-3 commit is held back from the push; the remote never gets a tree
// letta-code's pre-commit hook would refuse. And a letta-code call with
// an unknown key answers on stdout. Before, all three were pushed and
// the unknown key answered an empty stdout.
func TestLettaConstraints_EveryRoute(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lc")
	dir := memDir(home, "lc")
	// The operator (another clone) puts letta-code's defaults on the remote.
	peer := peerClone(t, srv, "lc")
	os.WriteFile(filepath.Join(peer, ".memfs.config.json"), []byte("{\n  \"version\": 1,\n  \"maxDepth\": 2,\n  \"maxFileCharacters\": 20000,\n  \"maxCoreMemoryCharacters\": 65536\n}\n"), 0o600)
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-qm", "letta-code's limits")
	git(t, peer, "push", "-q", "origin", "HEAD")
	p.turn("lc")
	waitFor(t, 10*time.Second, "the config pulled", func() bool {
		_, err := os.Stat(filepath.Join(dir, ".memfs.config.json"))
		return err == nil
	})

	memory := func(input string) (int, string) {
		cmd := exec.Command(binPath, "memory", "--agent", "lc", "--dialect", "letta-code", "--home", home, "--base-url", srv.URL)
		cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
		cmd.Stdin = strings.NewReader(input)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stdout.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, stdout.String()
	}
	// The tool: refused, letta-code's hook output on stdout, nothing written.
	code, out := memory(`{"command":"create","reason":"deep","file_path":"system/a/b/c.md","description":"Deep","file_text":"x\n"}`)
	for _, want := range []string{"Memory validation blocked this commit.", "  system/a/b/c.md: depth 3 exceeds maxDepth 2", "Do not raise or disable these limits unless the user explicitly approves it."} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("depth-3 create: exit %d, stdout %q; want %q in it", code, out, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "system", "a")); !os.IsNotExist(err) {
		t.Fatalf("the refused create left %v", err)
	}
	// An unknown key: the answer on stdout too.
	if code, out := memory(`{"command":"create","reason":"r","file_path":"system/n.md","description":"N","file_text":"x\n","extra":1}`); code != 1 || !strings.Contains(out, `unknown field "extra"`) {
		t.Fatalf("unknown key: exit %d, stdout %q", code, out)
	}
	// A direct write over 20,000 characters: held with a reminder.
	big := "---\ndescription: big\n---\n"
	big += strings.Repeat("x", 20001-len(big))
	os.WriteFile(filepath.Join(dir, "system", "big.md"), []byte(big), 0o600)
	// A shell's commit of a depth-3 file: held back from the push.
	os.MkdirAll(filepath.Join(dir, "system", "d", "e"), 0o700)
	os.WriteFile(filepath.Join(dir, "system", "d", "e", "f.md"), []byte("---\ndescription: deep\n---\nx\n"), 0o600)
	git(t, dir, "add", "system/d/e/f.md")
	git(t, dir, "commit", "-qm", "shell")
	var st struct {
		ConstraintsHeld []struct {
			Path     string   `json:"path"`
			Problems []string `json:"problems"`
		} `json:"constraints_held"`
	}
	waitFor(t, 15*time.Second, "both held in status", func() bool {
		// A turn pushes the shell's commit; it answers delayed while a
		// write is held.
		p.call("POST", "/v1/agents/lc/turn?wait=1s", "", nil)
		st.ConstraintsHeld = nil
		p.get("/v1/agents/lc/status", &st)
		return len(st.ConstraintsHeld) == 2
	})
	if h := st.ConstraintsHeld; h[0].Path != "system/big.md" || h[0].Problems[0] != "system/big.md: 20001 characters exceeds 20000 from maxFileCharacters" ||
		h[1].Path != "system/d/e/f.md" || h[1].Problems[0] != "system/d/e/f.md: depth 3 exceeds maxDepth 2" {
		t.Fatalf("constraints_held = %+v", h)
	}
	if !p.reminders("lc").has("constraints_held") {
		t.Fatalf("no constraints_held reminder: %+v", p.reminders("lc"))
	}
	files := git(t, srv.RepoDir("lc"), "ls-tree", "-r", "--name-only", "main")
	if strings.Contains(files, "system/big.md") || strings.Contains(files, "system/d/") || strings.Contains(files, "system/a/") {
		t.Fatalf("the remote got a tree letta-code refuses:\n%s", files)
	}
	// Split: committed and pushed, the hold cleared.
	os.WriteFile(filepath.Join(dir, "system", "big.md"), []byte(big[:20000]), 0o600)
	waitFor(t, 15*time.Second, "the shortened file pushed", func() bool {
		p.call("POST", "/v1/agents/lc/turn?wait=1s", "", nil)
		return strings.Contains(git(t, srv.RepoDir("lc"), "ls-tree", "-r", "--name-only", "main"), "system/big.md")
	})
}
