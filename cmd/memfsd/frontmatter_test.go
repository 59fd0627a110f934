package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestFrontMatter_MustStillParse (SPEC §8): front matter that parses at
// HEAD must still parse after the agent's write. Through the tool, an
// insert at line 1 of a block with `limit: 100` put 150 characters inside
// the front matter, which then no longer parsed, so the limit stopped
// applying and the write was accepted: now refused, nothing committed.
// Through a direct write, the same break is held uncommitted with a
// frontmatter_held reminder, and committed once the front matter parses
// again.
func TestFrontMatter_MustStillParse(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "fm")
	dir := memDir(home, "fm")
	good := "---\ndescription: capped\nlimit: 100\n---\nshort body\n"
	if out, isErr := p.memory("fm", `{"command":"create","path":"/memories/notes/lim.md","file_text":"---\ndescription: capped\nlimit: 100\n---\nshort body\n"}`); isErr {
		t.Fatalf("create: %s", out)
	}
	head := git(t, dir, "rev-parse", "HEAD")

	// The tool.
	out, isErr := p.memory("fm", `{"command":"insert","path":"/memories/notes/lim.md","insert_line":1,"insert_text":"`+strings.Repeat("x", 150)+`"}`)
	if !isErr || !strings.Contains(out, "would break the file's front matter") {
		t.Fatalf("insert inside the front matter: %q (error %v)", out, isErr)
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatalf("the refused write committed: %s", git(t, dir, "log", "-1", "--stat"))
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "notes", "lim.md")); string(data) != good {
		t.Fatalf("the refused write was not undone: %q", data)
	}

	// A direct write: held, told, then committed once fixed.
	broken := "---\n" + strings.Repeat("y", 150) + "\ndescription: capped\nlimit: 100\n---\nshort body\n"
	os.WriteFile(filepath.Join(dir, "notes", "lim.md"), []byte(broken), 0o600)
	os.WriteFile(filepath.Join(dir, "notes", "other.md"), []byte("written beside it\n"), 0o600)
	waitFor(t, 10*time.Second, "the other file committed", func() bool {
		return strings.Contains(git(t, dir, "log", "--format=%s"), "create notes/other.md")
	})
	var st struct {
		FrontMatterHeld []string `json:"frontmatter_held"`
	}
	waitFor(t, 10*time.Second, "frontmatter_held in status", func() bool {
		p.get("/v1/agents/fm/status", &st)
		return len(st.FrontMatterHeld) == 1 && st.FrontMatterHeld[0] == "notes/lim.md"
	})
	if show := git(t, dir, "show", "HEAD:notes/lim.md"); show+"\n" != good {
		t.Fatalf("the broken write was committed: %q", show)
	}
	if r := p.reminders("fm"); !r.has("frontmatter_held") {
		t.Fatalf("reminders = %+v", r)
	}
	if tr := p.turn("fm"); git(t, srv.RepoDir("fm"), "show", "main:notes/lim.md")+"\n" != good {
		t.Fatalf("the broken write reached the remote: %+v", tr)
	}
	fixed := "---\ndescription: capped\nlimit: 100\n---\nshort body, fixed\n"
	os.WriteFile(filepath.Join(dir, "notes", "lim.md"), []byte(fixed), 0o600)
	waitFor(t, 10*time.Second, "the fixed file committed", func() bool {
		return git(t, dir, "show", "HEAD:notes/lim.md")+"\n" == fixed
	})
	waitFor(t, 10*time.Second, "the hold cleared", func() bool {
		st.FrontMatterHeld = nil
		p.get("/v1/agents/fm/status", &st)
		return len(st.FrontMatterHeld) == 0 && !p.reminders("fm").has("frontmatter_held")
	})
	git(t, dir, "fsck", "--strict")
}
