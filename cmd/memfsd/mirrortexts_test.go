package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// The mirror's texts are exact: right after `mirror set` the primary's tip
// is known, counts are grammatical ("1 commit"), a mirror whose tip is a
// child of a primary commit is not called unrelated, the class is said
// once, next steps carry --home (not the default here), and `mirror push
// --force` counts only the commits new to the mirror.
func TestMirror_ExactTexts(t *testing.T) {
	t.Parallel()
	primary, mirror := gitserver.New(t, token), gitserver.New(t, "")
	home := t.TempDir()
	p := startDaemon(t, primary, home, "--agent", "a1")
	commit := func(name string) {
		t.Helper()
		if out, isErr := p.memory("a1", `{"command":"create","path":"/memories/`+name+`","file_text":"`+name+`\n"}`); isErr {
			t.Fatalf("create %s: %s", name, out)
		}
		if tr := p.turn("a1"); tr.Outcome != "pushed" {
			t.Fatalf("turn: %+v", tr)
		}
	}
	commit("one.md")

	code, out := runCLI(t, primary, home, "mirror", "set", "--agent", "a1", "--url", mirror.RemoteURL("a1"))
	if code != 0 || strings.Contains(out, "primary tip: (none)") || regexp.MustCompile(`\b1 commits\b`).MatchString(out) {
		t.Fatalf("mirror set: %d\n%s", code, out)
	}
	waitFor(t, 10*time.Second, "the first mirror push", func() bool {
		m := p.mirror("a1").Mirror
		return m != nil && m.State == "synced"
	})
	commit("two.md")
	waitFor(t, 10*time.Second, "two.md mirrored", func() bool {
		m := p.mirror("a1").Mirror
		return m != nil && m.State == "synced" && m.LastPushedTip == git(t, primary.RepoDir("a1"), "rev-parse", "main")
	})
	if code, out := runCLI(t, primary, home, "mirror", "status", "--agent", "a1"); code != 0 || !strings.Contains(out, ", 1 commit\n") && !strings.Contains(out, ", 1 commit ") || strings.Contains(out, "1 commits") {
		t.Fatalf("mirror status after one commit: %d\n%s", code, out)
	}

	// Someone pushes to the mirror a child of the primary's tip.
	peer := filepath.Join(t.TempDir(), "peer")
	git(t, filepath.Dir(peer), "clone", "-q", mirror.RepoDir("a1"), peer)
	os.WriteFile(filepath.Join(peer, "theirs.md"), []byte("theirs\n"), 0o600)
	git(t, peer, "add", "theirs.md")
	git(t, peer, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "pushed to the mirror")
	git(t, peer, "push", "-q", "origin", "HEAD:main")
	commit("three.md")
	var msg, next string
	waitFor(t, 15*time.Second, "the mirror push refused as diverged", func() bool {
		m := p.mirror("a1").Mirror
		if m == nil || m.LastError == nil {
			return false
		}
		msg, next = m.LastError.Message, m.LastError.NextStep
		return strings.Contains(msg, "the mirror has commits the primary does not")
	})
	if strings.Contains(msg, "unrelated") || strings.Contains(msg, "non_fast_forward") || !strings.Contains(next, "--home "+home) {
		t.Fatalf("last error: %q, next step %q", msg, next)
	}
	_, out = runCLI(t, primary, home, "mirror", "status", "--agent", "a1")
	for _, line := range strings.Split(out, "\n") {
		if strings.Count(line, "non_fast_forward") > 1 {
			t.Fatalf("the class is said twice: %q\n%s", line, out)
		}
	}

	// --force makes the mirror a copy again: one commit is new to it.
	code, out = runCLI(t, primary, home, "mirror", "push", "--agent", "a1", "--force")
	if code != 0 || !regexp.MustCompile(`^pushed: [0-9a-f]{7}\.\.[0-9a-f]{7}, 1 commit in \d+ ms\n$`).MatchString(out) {
		t.Fatalf("mirror push --force: %d %q", code, out)
	}
	mirrorSameLog(t, primary, mirror, "a1")
}
