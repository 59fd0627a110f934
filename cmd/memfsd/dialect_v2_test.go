package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// lettaGolden is what letta-code 0.32.18's own memory tools wrote for the
// case named (testdata/letta/tool/expected.json, made by
// scripts/letta-tool-golden.mjs): each changed path's bytes.
func lettaGolden(t *testing.T, name string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "letta", "tool", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all []struct {
		Name    string             `json:"name"`
		Changed map[string]*string `json:"changed"`
	}
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Name == name {
			out := map[string]string{}
			for p, s := range c.Changed {
				if s != nil {
					out[p] = *s
				}
			}
			return out
		}
	}
	t.Fatalf("no golden case %q", name)
	return nil
}

// TestDialect_LettaCodeV2 runs letta-code's tools in a memfs v2 folder (a
// root MEMORY.md) through the API and the CLI (with the daemon and
// without): create, update_description and memory_apply_patch write
// front matter byte for byte as letta-code's own tools do (name and
// description as JSON strings, an index without front matter), each call
// one commit the daemon pushes, nothing held. Before, a v2 create wrote
// v1's description-only front matter, which v2's rules refused.
func TestDialect_LettaCodeV2(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "v2")
	dir := memDir(home, "v2")
	// The v2 folder of testdata/letta/tool/cases.json, as far as these
	// calls need it, written with Anthropic's tool.
	for path, text := range map[string]string{
		"MEMORY.md":          "# Memory\n\nThe index.\n",
		"profile.md":         "---\nname: \"Profile\"\ndescription: \"Who the user is\"\n---\nLikes Go.\n",
		"plain.md":           "---\nname: Plain\ndescription: Unquoted value\n---\nbody\n",
		"projects/MEMORY.md": "# Projects",
	} {
		in, _ := json.Marshal(map[string]string{"command": "create", "path": "/memories/" + path, "file_text": text})
		if out, isErr := p.memory("v2", string(in)); isErr {
			t.Fatalf("create %s: %s", path, out)
		}
	}
	check := func(golden, input, out string, before int) {
		t.Helper()
		if n := commitCount(t, dir, "HEAD"); n != before+1 {
			t.Fatalf("%s: %d commits, want 1 (%s)", golden, n-before, out)
		}
		for path, want := range lettaGolden(t, golden) {
			if got, _ := os.ReadFile(filepath.Join(dir, path)); string(got) != want {
				t.Fatalf("%s: %s is %q, letta-code writes %q", input, path, got, want)
			}
			if got := git(t, dir, "show", "HEAD:"+path); got != strings.TrimSpace(want) {
				t.Fatalf("%s: committed %s is %q, letta-code writes %q", input, path, got, want)
			}
		}
	}
	api := func(golden, input string) {
		t.Helper()
		before := commitCount(t, dir, "HEAD")
		out, isErr := p.memory("v2", input)
		if isErr {
			t.Fatalf("%s: %s", input, out)
		}
		check(golden, input, out, before)
	}
	cli := func(golden, input string, args ...string) {
		t.Helper()
		before := commitCount(t, dir, "HEAD")
		code, out := lettaCLI(t, srv, home, input, append([]string{"--agent", "v2", "--dialect", "letta-code"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", input, code, out)
		}
		check(golden, input, out, before)
	}
	api("v2 create at the root", `{"command":"create","reason":"r","file_path":"travel-plans","description":"Trips \"planned\"\nsoon","file_text":"Paris in May."}`)
	api("v2 update_description of unquoted front matter", `{"command":"update_description","reason":"r","file_path":"plain","description":"Quoted now"}`)
	api("v2 create a folder's index", `{"command":"create","reason":"r","file_path":"notes/MEMORY","file_text":"# Notes"}`)
	cli("v2 update_description", `{"command":"update_description","reason":"r","file_path":"profile.md","description":"Who the \"user\" is\r\nnow"}`)
	cli("v2 patch: add a file without front matter", `{"reason":"r","input":`+quoteJSON("*** Begin Patch\n*** Add File: ideas-list.md\n+one\n+two\n*** End Patch\n")+`}`, "--tool", "memory_apply_patch")
	// letta-code's v2 refusals, in its words, nothing written.
	before := commitCount(t, dir, "HEAD")
	for input, want := range map[string]string{
		`{"command":"create","reason":"r","file_path":"drafts/x","description":"X"}`: "Memory requires drafts/MEMORY.md before writing drafts/x.md",
		`{"command":"delete","reason":"r","file_path":"projects/MEMORY.md"}`:         "memory delete: MEMORY.md indexes cannot be deleted",
		`{"command":"create","reason":"r","file_path":"system/x","description":"X"}`: "memory: core memory uses root Markdown files, not system/",
	} {
		if out, isErr := p.memory("v2", input); !isErr || out != want {
			t.Fatalf("%s: %q (error %v), want %q", input, out, isErr, want)
		}
	}
	if n := commitCount(t, dir, "HEAD"); n != before {
		t.Fatalf("refused calls made %d commits", n-before)
	}
	if tr := p.turn("v2"); tr.Outcome != "pushed" {
		t.Fatalf("turn = %+v", tr)
	}
	var st struct {
		FrontMatterHeld []string `json:"frontmatter_held"`
	}
	if p.get("/v1/agents/v2/status", &st); len(st.FrontMatterHeld) != 0 {
		t.Fatalf("held: %v", st.FrontMatterHeld)
	}
	// Without the daemon: the CLI on the folder.
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cli("v2 create in an indexed folder", `{"command":"create","reason":"r","file_path":"projects/beta","description":"Project beta","file_text":"beta\n"}`)
	git(t, dir, "fsck", "--strict")
}
