package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

func TestContext_Rendering(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "small", srv.RepoDir("ctx"))
	a, err := open(t, newConfig(t, srv, token, nil), "ctx")
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Context()
	if err != nil {
		t.Fatal(err)
	}
	if head := git(t, a.Dir(), "rev-parse", "HEAD"); c.Revision != head {
		t.Fatalf("revision %s, HEAD %s", c.Revision, head)
	}
	persona, _ := os.ReadFile(filepath.Join(a.Dir(), "system", "persona.md"))
	body := string(persona[strings.Index(string(persona), "\n---\n")+5:])
	for _, want := range []string{
		"<system/persona.md>", "<path>/memories/system/persona.md</path>", "<read_only>true</read_only>",
		strings.TrimRight(body, "\n"), "<system/human.md>",
		"/memories/\n", "notes/", "today.md — ", "policy.md — House rules.",
	} {
		if !strings.Contains(c.Text, want) {
			t.Fatalf("context lacks %q:\n%s", want, c.Text)
		}
	}
	if strings.Contains(c.Text, "Never share account numbers.") {
		t.Fatalf("a non-system file's body is in the context:\n%s", c.Text)
	}
	if c.Tokens != len(c.Text)/4 || len(c.Warnings) != 0 {
		t.Fatalf("tokens %d warnings %v", c.Tokens, c.Warnings)
	}
	// A write makes a new revision; a file with no front matter shows its
	// first line.
	os.WriteFile(filepath.Join(a.Dir(), "ideas.md"), []byte("\n  first real line\nsecond\n"), 0o600)
	if _, err := a.Sync(context.Background(), agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	c2, _ := a.Context()
	if c2.Revision == c.Revision || !strings.Contains(c2.Text, "ideas.md — first real line") {
		t.Fatalf("after a write: revision %s, text:\n%s", c2.Revision, c2.Text)
	}
}

func TestContext_BudgetsAndCache(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := open(t, cfg, "big")
	if err != nil {
		t.Fatal(err)
	}
	// 10,000 files in a soak, 3,000 in the suite: folders of 250 (over 50
	// per folder; 12 folders already pass the 500-line budget) in one commit.
	folders := soak.Int(12, 40)
	files := folders * 250
	for i := 0; i < files; i++ {
		p := filepath.Join(a.Dir(), fmt.Sprintf("d%02d", i%folders), fmt.Sprintf("f%05d.md", i))
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(fmt.Sprintf("---\ndescription: note %d\n---\nbody %d\n", i, i)), 0o600)
	}
	git(t, a.Dir(), "add", "-A")
	git(t, a.Dir(), "-c", "gc.auto=0", "commit", "-q", "-m", "ten thousand notes") // no detached auto-gc outliving the test
	c, err := a.Context()
	if err != nil {
		t.Fatal(err)
	}
	tree := c.Text[strings.Index(c.Text, "/memories/\n"):]
	lines := strings.Split(tree, "\n")
	if len(lines) > agent.ContextTreeMaxLines+2 || len(tree) > agent.ContextTreeMaxChars+100 {
		t.Fatalf("tree of %d lines, %d characters", len(lines), len(tree))
	}
	if !strings.Contains(tree, "… (200 more entries)") || !strings.Contains(tree, "[Tree truncated: showing") || len(c.Warnings) == 0 {
		t.Fatalf("budget marks missing:\n%s", tree[max(0, len(tree)-600):])
	}
	// Cached by revision: the next calls read one ref.
	var took []time.Duration
	for i := 0; i < 21; i++ {
		start := time.Now()
		again, err := a.Context()
		took = append(took, time.Since(start))
		if err != nil || again.Text != c.Text {
			t.Fatal("cached answer differs")
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	// A cached answer reads one ref: 5 ms on a quiet machine, with room for
	// a suite running side by side.
	limit := soak.Duration(25*time.Millisecond, 5*time.Millisecond)
	if took[10] > limit {
		t.Fatalf("cached context of a %d-file memory: median %s, want under %s", files, took[10], limit)
	}
	t.Logf("cached context, %d files: median %s", files, took[10])

	// letta-code's format: rendered once per revision (every .md read), then
	// cached like memfsd's.
	start := time.Now()
	lc, err := a.ContextAs(agent.FormatLettaCode)
	first := time.Since(start)
	if err != nil || lc.Format != agent.FormatLettaCode || !strings.Contains(lc.Text, "\n[Tree truncated: showing ") || len(lc.Warnings) == 0 {
		t.Fatalf("letta-code context: %v %v\n%s", err, lc.Warnings, lc.Text[max(0, len(lc.Text)-600):])
	}
	start = time.Now()
	if again, err := a.ContextAs(agent.FormatLettaCode); err != nil || again.Text != lc.Text {
		t.Fatal("cached letta-code answer differs")
	}
	if cached := time.Since(start); cached > limit {
		t.Fatalf("cached letta-code context of a %d-file memory: %s, want under %s", files, cached, limit)
	} else {
		t.Logf("letta-code context, %d files: %s rendered, %s cached", files, first, cached)
	}
}
