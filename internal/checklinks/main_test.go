package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGithubAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Memory tool (`memory_20250818`)":                           "memory-tool-memory_20250818",
		"The agent's surface":                                       "the-agents-surface",
		"How the engine works (gitmem)":                             "how-the-engine-works-gitmem",
		"Status: what waits on the operator":                        "status-what-waits-on-the-operator",
		"Deadlines: a silent remote costs an attempt, never a hang": "deadlines-a-silent-remote-costs-an-attempt-never-a-hang",
		"letta-code's memory tools (`--dialect letta-code`)":        "letta-codes-memory-tools---dialect-letta-code",
		"MCP: memory for any MCP client":                            "mcp-memory-for-any-mcp-client",
		"Recovery: nothing written locally is lost":                 "recovery-nothing-written-locally-is-lost",
		"See [the daemon](x.md)":                                    "see-the-daemon",
	} {
		if got := githubAnchor(heading); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

func write(t *testing.T, root, name, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	write(t, root, "README.md", "# memfsd\n\n## Where to read next\n\n"+
		"- [ops](docs/ops.md) and [its places](docs/ops.md#places)\n"+
		"- [here](#where-to-read-next), [web](https://example.com/x#y), [mail](mailto:a@b)\n"+
		"- [gone](docs/gone.md)\n"+ // broken: no file
		"- [bad anchor](docs/ops.md#no-such-heading)\n"+ // broken: no heading
		"- `[in code](docs/nothere.md)` is not a link\n"+
		"```\n[in a fence](docs/nothere.md)\n## Not a heading\n```\n"+
		"- [fenced heading](#not-a-heading)\n"+ // broken: headings in fences do not count
		"[ref]: docs/missing-ref.md\n") // broken: reference definition
	write(t, root, "docs/ops.md", "# Ops\n\n## Places\n\n## Places\n\n"+
		"[back](../README.md#memfsd), [second places](#places-1), [example](../examples/a.go)\n"+
		"[up and out](../../etc/passwd)\n") // broken: outside the repository
	write(t, root, "examples/a.go", "package a\n")

	files, err := pages(root)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, " ") != "README.md docs/ops.md" {
		t.Fatalf("pages = %q", files)
	}
	problems, links, err := check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:7: docs/gone.md: no file docs/gone.md",
		"README.md:8: docs/ops.md#no-such-heading: no heading with anchor #no-such-heading in docs/ops.md",
		"README.md:14: #not-a-heading: no heading with anchor #not-a-heading in README.md",
		"README.md:15: docs/missing-ref.md: no file docs/missing-ref.md",
		"docs/ops.md:8: ../../etc/passwd: outside the repository",
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if links != 11 {
		t.Fatalf("links = %d, want 11 relative links", links)
	}
}

// TestRepositoryLinks checks this repository's own README.md and docs/, as
// scripts/check-links.sh does in CI.
func TestRepositoryLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := pages(root)
	if err != nil {
		t.Fatal(err)
	}
	problems, _, err := check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("broken links:\n%s", strings.Join(problems, "\n"))
	}
}
