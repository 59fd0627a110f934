package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestLettaRules_ToolRefused (SPEC §9): a memory-tool write that breaks
// letta-code's front-matter rules in system/ or reference/ is refused with
// letta-code's pre-commit hook message, undone, nothing committed; in
// both dialects. Before, all four were committed.
func TestLettaRules_ToolRefused(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lr")
	dir := memDir(home, "lr")
	head := git(t, dir, "rev-parse", "HEAD")
	for input, want := range map[string]string{
		`{"command":"create","path":"/memories/system/plain.md","file_text":"no front matter\n"}`:                                "system/plain.md: missing frontmatter (must start with ---)",
		`{"command":"create","path":"/memories/system/nodesc.md","file_text":"---\nlimit: 100\n---\nbody\n"}`:                    "system/nodesc.md: missing required field 'description'",
		`{"command":"create","path":"/memories/reference/tags.md","file_text":"---\ndescription: d\ntags: a\n---\nbody\n"}`:      "reference/tags.md: unknown frontmatter key 'tags' (allowed: description read_only limit)",
		`{"command":"create","path":"/memories/system/open.md","file_text":"---\ndescription: d\nbody with no closing fence\n"}`: "system/open.md: frontmatter opened but never closed (missing closing ---)",
	} {
		out, isErr := p.memory("lr", input)
		if !isErr || !strings.Contains(out, want) {
			t.Fatalf("%s: %q (error %v), want %q in it", input, out, isErr, want)
		}
	}
	// letta-code's dialect: its hook's output, under the tool's prefix.
	if out, isErr := p.memory("lr", `{"dialect":"letta-code","command":"create","reason":"r","file_path":"system/ok.md","description":"Fine","file_text":"body\n"}`); isErr {
		t.Fatalf("a valid letta-code create: %q", out)
	}
	head = git(t, dir, "rev-parse", "HEAD")
	patch := "*** Begin Patch\n*** Add File: system/raw.md\n+---\n+description: d\n+tags: x\n+---\n+body\n*** End Patch"
	out, isErr := p.memory("lr", `{"tool":"memory_apply_patch","reason":"r","input":`+quoteJSON(patch)+`}`)
	if want := "memory_apply_patch: Memory validation failed:\n  system/raw.md: unknown frontmatter key 'tags' (allowed: description read_only limit)"; !isErr || out != want {
		t.Fatalf("letta-code patch adding a file with an unknown key: %q (error %v), want %q", out, isErr, want)
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatalf("a refused write committed: %s", git(t, dir, "log", "-3", "--stat"))
	}
	for _, f := range []string{"system/plain.md", "system/nodesc.md", "reference/tags.md", "system/open.md", "system/raw.md"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Fatalf("the refused create of %s was not undone (%v)", f, err)
		}
	}
	// Outside system/ and reference/ the rules do not apply (v1).
	if out, isErr := p.memory("lr", `{"command":"create","path":"/memories/notes/plain.md","file_text":"no front matter\n"}`); isErr {
		t.Fatalf("notes/ without front matter: %q", out)
	}
}

// TestLettaRules_DirectWriteHeld: a direct write breaking the rules is held
// uncommitted with a frontmatter_held reminder naming the rule in
// letta-code's words, and committed once fixed. Before, it was committed.
func TestLettaRules_DirectWriteHeld(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lr")
	dir := memDir(home, "lr")
	os.WriteFile(filepath.Join(dir, "system", "notes.md"), []byte("no front matter\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "system", "other.md"), []byte("---\ndescription: beside it\n---\nok\n"), 0o600)
	waitFor(t, 10*time.Second, "the valid file committed", func() bool {
		return strings.Contains(git(t, dir, "log", "--format=%s"), "create system/other.md")
	})
	var st struct {
		FrontMatterHeld    []string `json:"frontmatter_held"`
		FrontMatterInvalid []string `json:"frontmatter_invalid"`
	}
	waitFor(t, 10*time.Second, "frontmatter_held in status", func() bool {
		p.get("/v1/agents/lr/status", &st)
		return len(st.FrontMatterHeld) == 1 && st.FrontMatterHeld[0] == "system/notes.md"
	})
	if want := "system/notes.md: missing frontmatter (must start with ---)"; len(st.FrontMatterInvalid) != 1 || st.FrontMatterInvalid[0] != want {
		t.Fatalf("frontmatter_invalid = %q, want %q", st.FrontMatterInvalid, want)
	}
	if _, err := gitTry(dir, "cat-file", "-e", "HEAD:system/notes.md"); err == nil {
		t.Fatal("the invalid file was committed")
	}
	r := p.reminders("lr")
	found := false
	for _, x := range r.Reminders {
		found = found || x.Kind == "frontmatter_held" && strings.Contains(x.Text, "/memories/system/notes.md: missing frontmatter (must start with ---)")
	}
	if !found {
		t.Fatalf("no frontmatter_held reminder naming the rule: %+v", r)
	}
	// Fixed, but with an unknown key: still held, the reminder says why.
	os.WriteFile(filepath.Join(dir, "system", "notes.md"), []byte("---\ndescription: notes\ntags: a\n---\nbody\n"), 0o600)
	waitFor(t, 10*time.Second, "the new rule in status", func() bool {
		p.get("/v1/agents/lr/status", &st)
		return len(st.FrontMatterInvalid) == 1 && strings.Contains(st.FrontMatterInvalid[0], "unknown frontmatter key 'tags'")
	})
	fixed := "---\ndescription: notes\n---\nbody\n"
	os.WriteFile(filepath.Join(dir, "system", "notes.md"), []byte(fixed), 0o600)
	waitFor(t, 10*time.Second, "the fixed file committed", func() bool {
		out, err := gitTry(dir, "show", "HEAD:system/notes.md")
		return err == nil && out+"\n" == fixed
	})
	waitFor(t, 10*time.Second, "the hold cleared", func() bool {
		st.FrontMatterHeld = nil
		p.get("/v1/agents/lr/status", &st)
		return len(st.FrontMatterHeld) == 0 && !p.reminders("lr").has("frontmatter_held")
	})
	if tr := p.turn("lr"); tr.Outcome != "pushed" {
		t.Fatalf("turn = %+v", tr)
	}
	git(t, dir, "fsck", "--strict")
}

// TestLettaRules_Off: --no-frontmatter-rules (or its env) lets both routes
// through, for folders that are not letta-code's: front matter and tree
// constraints alike.
func TestLettaRules_Off(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lr", "--no-frontmatter-rules")
	dir := memDir(home, "lr")
	if out, isErr := p.memory("lr", `{"command":"create","path":"/memories/system/plain.md","file_text":"no front matter\n"}`); isErr {
		t.Fatalf("rules off, tool: %q", out)
	}
	os.MkdirAll(filepath.Join(dir, "reference"), 0o700)
	os.WriteFile(filepath.Join(dir, "reference", "tags.md"), []byte("---\ndescription: d\ntags: a\n---\n"), 0o600)
	waitFor(t, 10*time.Second, "the direct write committed", func() bool {
		_, err := gitTry(dir, "cat-file", "-e", "HEAD:reference/tags.md")
		return err == nil
	})
}

// TestLettaRules_V2: a root MEMORY.md switches to memfs v2's rules:
// MEMORY.md files without front matter, every other projected file exactly
// name and description.
func TestLettaRules_V2(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lr")
	dir := memDir(home, "lr")
	steps := []struct{ input, refused string }{
		{`{"command":"create","path":"/memories/MEMORY.md","file_text":"# Memory\n"}`, ""},
		{`{"command":"create","path":"/memories/prefs.md","file_text":"---\ndescription: d\n---\nbody\n"}`, "prefs.md: missing required field 'name'"},
		{`{"command":"create","path":"/memories/prefs.md","file_text":"---\nname: prefs\ndescription: d\nlimit: 10\n---\nbody\n"}`, "prefs.md: unknown frontmatter key 'limit' (allowed: name description)"},
		{`{"command":"create","path":"/memories/prefs.md","file_text":"---\nname: prefs\ndescription: d\n---\nbody\n"}`, ""},
		{`{"command":"create","path":"/memories/project/MEMORY.md","file_text":"---\nname: p\n---\n"}`, "project/MEMORY.md: MEMORY.md must not have frontmatter"},
		{`{"command":"create","path":"/memories/project/MEMORY.md","file_text":"# Project\n"}`, ""},
		{`{"command":"create","path":"/memories/project/plan.md","file_text":"---\nname: plan\nname: again\ndescription: d\n---\n"}`, "project/plan.md: duplicate frontmatter key 'name'"},
		// Not projected (no deep/MEMORY.md): letta-code's front-matter
		// check skips it, its tree constraints refuse it (issue 29).
		{`{"command":"create","path":"/memories/deep/free.md","file_text":"anything\n"}`, "deep/free.md: missing required index deep/MEMORY.md"},
	}
	for _, s := range steps {
		out, isErr := p.memory("lr", s.input)
		if s.refused == "" && isErr || s.refused != "" && (!isErr || !strings.Contains(out, s.refused)) {
			t.Fatalf("%s: %q (error %v), want refused %q", s.input, out, isErr, s.refused)
		}
	}
	// A direct write in v2: held, named.
	os.WriteFile(filepath.Join(dir, "project", "bad.md"), []byte("---\ndescription: d\n---\n"), 0o600)
	var st struct {
		FrontMatterInvalid []string `json:"frontmatter_invalid"`
	}
	waitFor(t, 10*time.Second, "the v2 rule in status", func() bool {
		p.get("/v1/agents/lr/status", &st)
		return len(st.FrontMatterInvalid) == 1 && st.FrontMatterInvalid[0] == "project/bad.md: missing required field 'name'"
	})
	if _, err := gitTry(dir, "cat-file", "-e", "HEAD:project/bad.md"); err == nil {
		t.Fatal("the invalid v2 file was committed")
	}
}
