package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// A shell's `git commit` that breaks front matter (one that parsed on the
// remote no longer parses; a file in letta-code's scope gains a key its
// rules refuse) never reaches the remote: the outgoing check holds the file
// back in a `memfsd: hold back <path>` commit (the remote's version in the
// commit and the index), leaves the agent's bytes in the folder as an
// uncommitted write, names it in frontmatter_held with a reminder, and
// pushes the rest of the commit. Once fixed, the file is committed and
// pushed. Before, the outgoing check judged read-only only, and the broken
// front matter was pushed as it was.
func TestFrontMatter_ShellCommitHeldBack(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	// A long debounce: the watcher must not take the writes before the
	// shell's commit does (the direct-write route is tested elsewhere).
	p := startDaemon(t, srv, home, "--agent", "fs", "--debounce", "10s")
	dir := memDir(home, "fs")
	bare := srv.RepoDir("fs")
	good := "---\ndescription: capped\nlimit: 100\n---\nshort body\n"
	ref := "---\ndescription: a reference\n---\nref body\n"
	for path, text := range map[string]string{"notes/lim.md": good, "reference/r.md": ref} {
		if out, isErr := p.memory("fs", `{"command":"create","path":"/memories/`+path+`","file_text":`+quoteJSON(text)+`}`); isErr {
			t.Fatalf("create %s: %s", path, out)
		}
	}
	if tr := p.turn("fs"); tr.Outcome != "pushed" {
		t.Fatalf("turn = %+v", tr)
	}

	// The agent's shell: front matter that no longer closes, a key
	// letta-code's rules refuse, and an ordinary file, in one commit.
	broken := "---\ndescription: capped\nlimit: 100\nshort body, edited\n"
	unknownKey := "---\ndescription: a reference\ncolour: blue\n---\nref body\n"
	os.WriteFile(filepath.Join(dir, "notes", "lim.md"), []byte(broken), 0o600)
	os.WriteFile(filepath.Join(dir, "reference", "r.md"), []byte(unknownKey), 0o600)
	os.WriteFile(filepath.Join(dir, "notes", "ok.md"), []byte("an ordinary note\n"), 0o600)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "agent shell commit")

	if tr := p.turn("fs"); tr.Outcome != "pushed" || tr.Status.Ahead != 0 {
		t.Fatalf("turn = %+v", tr)
	}
	if got := git(t, bare, "show", "main:notes/lim.md"); got+"\n" != good {
		t.Fatalf("broken front matter reached the remote: %q", got)
	}
	if got := git(t, bare, "show", "main:reference/r.md"); got+"\n" != ref {
		t.Fatalf("front matter breaking letta-code's rules reached the remote: %q", got)
	}
	if got := git(t, bare, "show", "main:notes/ok.md"); got != "an ordinary note" {
		t.Fatalf("the ordinary file of the same commit was not pushed: %q", got)
	}
	log := git(t, bare, "log", "--format=%s", "main")
	for _, want := range []string{"memfsd: hold back notes/lim.md", "memfsd: hold back reference/r.md"} {
		if !strings.Contains(log, want) {
			t.Fatalf("remote log lacks %q:\n%s", want, log)
		}
	}
	// Nothing the agent wrote is lost: its bytes stay in the folder.
	if data, _ := os.ReadFile(filepath.Join(dir, "notes", "lim.md")); string(data) != broken {
		t.Fatalf("the agent's file was changed: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "reference", "r.md")); string(data) != unknownKey {
		t.Fatalf("the agent's file was changed: %q", data)
	}
	// The agent is told.
	var st struct {
		FrontMatterHeld    []string `json:"frontmatter_held"`
		FrontMatterInvalid []string `json:"frontmatter_invalid"`
	}
	p.get("/v1/agents/fs/status", &st)
	if !slices.Equal(st.FrontMatterHeld, []string{"notes/lim.md", "reference/r.md"}) {
		t.Fatalf("frontmatter_held = %v", st.FrontMatterHeld)
	}
	if r := p.reminders("fs"); !r.has("frontmatter_held") {
		t.Fatalf("reminders = %+v", r)
	}
	// Still held after the next turn's flush (the direct-write route
	// takes over).
	if tr := p.turn("fs"); tr.Outcome == "error" {
		t.Fatalf("turn = %+v", tr)
	}
	if got := git(t, bare, "show", "main:notes/lim.md"); got+"\n" != good {
		t.Fatalf("broken front matter reached the remote on the next turn: %q", got)
	}
	// Fixed: committed and pushed, no longer held.
	fixed := "---\ndescription: capped\nlimit: 100\n---\nshort body, edited\n"
	os.WriteFile(filepath.Join(dir, "notes", "lim.md"), []byte(fixed), 0o600)
	// A turn pushes what the watcher has settled: wait for the commit (on
	// a loaded machine the write's event can come after the turn's flush).
	waitFor(t, 20*time.Second, "the fixed file committed", func() bool {
		got, err := gitTry(dir, "show", "HEAD:notes/lim.md")
		return err == nil && got+"\n" == fixed
	})
	if tr := p.turn("fs"); tr.Outcome != "pushed" {
		t.Fatalf("turn = %+v", tr)
	}
	if got := git(t, bare, "show", "main:notes/lim.md"); got+"\n" != fixed {
		t.Fatalf("the fixed file was not pushed: %q", got)
	}
	st.FrontMatterHeld = nil
	p.get("/v1/agents/fs/status", &st)
	if !slices.Equal(st.FrontMatterHeld, []string{"reference/r.md"}) {
		t.Fatalf("frontmatter_held after the fix = %v", st.FrontMatterHeld)
	}
	git(t, bare, "fsck", "--strict")
}
