package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// lettaHome makes a daemon-less home whose agent's memory is the fixture
// tree testdata/letta/<tree>/tree, committed with the git CLI.
func lettaHome(t *testing.T, tree, id string) string {
	t.Helper()
	home := t.TempDir()
	dir := memDir(home, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "testdata", "letta", tree, "tree"))); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "letta fixture")
	return home
}

// TestContext_LettaFormatsThroughBinary runs `memfsd context --format
// letta-code|letta-local` with no daemon on the fixture trees and expects
// letta-code's own renderings (testdata/letta/*/*.golden) byte for byte.
func TestContext_LettaFormatsThroughBinary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ tree, format string }{
		{"v1", "letta-code"}, {"v1", "letta-local"}, {"v2", "letta-code"}, {"v2", "letta-local"},
	} {
		t.Run(c.tree+"_"+c.format, func(t *testing.T) {
			home := lettaHome(t, c.tree, "lx")
			want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "letta", c.tree, c.format+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(binPath, "context", "--agent", "lx", "--home", home, "--format", c.format)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("memfsd context: %v\n%s", err, stderr.String())
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("memfsd context --format %s differs from letta-code's rendering (%d bytes, want %d):\n%s", c.format, len(out), len(want), out)
			}
		})
	}
	home := lettaHome(t, "v1", "lx")
	out, err := exec.Command(binPath, "context", "--agent", "lx", "--home", home, "--format", "letta").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "flag --format") || !strings.Contains(string(out), "letta-code") {
		t.Fatalf("an unknown format: %v\n%s", err, out)
	}
}

// TestContext_LettaFormatThroughAPI asks a running daemon for
// ?format=letta-code, and the CLI through it.
func TestContext_LettaFormatThroughAPI(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "cl")
	if out, isErr := p.memory("cl", `{"command":"create","path":"/memories/MEMORY.md","file_text":"# Memory\n"}`); isErr {
		t.Fatal(out)
	}
	if out, isErr := p.memory("cl", `{"command":"create","path":"/memories/persona.md","file_text":"---\nname: persona\ndescription: me\n---\nhello\n"}`); isErr {
		t.Fatal(out)
	}
	var c struct {
		Format   string `json:"format"`
		Revision string `json:"revision"`
		Text     string `json:"text"`
	}
	if code, err := p.get("/v1/agents/cl/context?format=letta-code", &c); err != nil || code != 200 {
		t.Fatalf("context: %d %v", code, err)
	}
	// A v2 memory (root MEMORY.md): root .md files pinned, system/ not.
	if c.Format != "letta-code" || c.Revision != git(t, memDir(home, "cl"), "rev-parse", "HEAD") ||
		!strings.HasPrefix(c.Text, "<parent_memory>\n<memory_filesystem>\n/memory/\n") ||
		!strings.Contains(c.Text, "<memory>\n<path>$MEMORY_DIR/persona.md</path>\n---\nname: persona\n") ||
		strings.Contains(c.Text, "system/persona.md") {
		t.Fatalf("context = %+v", c)
	}
	var e map[string]string
	if code, _ := p.get("/v1/agents/cl/context?format=yaml", &e); code != 400 || !strings.Contains(e["error"], "letta-local") {
		t.Fatalf("unknown format: %d %v", code, e)
	}
	out, err := exec.Command(binPath, "context", "--agent", "cl", "--home", home, "--format", "letta-code", "--json").Output()
	var viaCLI struct{ Format, Text string }
	if err != nil || json.Unmarshal(out, &viaCLI) != nil || viaCLI.Text != c.Text || viaCLI.Format != "letta-code" {
		t.Fatalf("memfsd context through the daemon: %v\n%s", err, out)
	}
}
