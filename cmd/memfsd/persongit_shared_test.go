package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestShared_PersonCommitInSharedCloneWhileViewWrites (issue 33, shared
// repositories): a person's `git commit` in the daemon's clone of a shared
// repository (<home>/shared/<name>/memory), its editor open, while an
// attached agent writes a file in its view (plain folder, no .git) and
// through the tool (?shared=): memfsd's commits of those writes wait, the
// person's commit lands with the person's author and message, the
// agent's writes after it, by the agent, pushed; the view gets the
// person's file; git status clean, fsck clean.
func TestShared_PersonCommitInSharedCloneWhileViewWrites(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	seedShared(t, srv, "team", map[string]string{"README.md": "team memory\n"})
	p := startDaemon(t, srv, home, "--agent", "sw")
	if code, err := p.adminCall("PUT", "/v1/agents/sw/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
		t.Fatalf("attach: %d %v", code, err)
	}
	waitFor(t, 20*time.Second, "the view holds the shared tip", func() bool {
		return readView(home, "sw", "team", "README.md") == "team memory\n"
	})
	clone := filepath.Join(home, "shared", "team", "memory")
	view := filepath.Join(home, "agents", "sw", "shared", "team")
	head := git(t, clone, "rev-parse", "HEAD")

	stage(t, clone, "person.md", "the person's note\n")
	editor, open, close := slowEditor(t)
	wait := personGit(t, clone, editor, "person: note", "commit")
	open()
	os.WriteFile(filepath.Join(view, "view.md"), []byte("from the view\n"), 0o600)
	if out, isErr := p.sharedTool("sw", "team", `{"command":"create","path":"/memories/tool.md","file_text":"from the tool\n"}`); isErr {
		t.Fatalf("shared tool write: %s", out)
	}
	// Long enough for the view's write to settle and be taken (the
	// debounce is 50 ms; a round a second).
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if got := git(t, clone, "rev-parse", "HEAD"); got != head {
			t.Fatalf("memfsd committed in the shared clone under the person's editor: %s", git(t, clone, "log", "--format=%an|%s", "-3"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	close()
	if out, err := wait(); err != nil {
		t.Fatalf("the person's git commit in the shared clone failed: %v\n%s", err, out)
	}
	waitFor(t, 15*time.Second, "the agent's writes committed after the person's", func() bool {
		files := git(t, clone, "ls-tree", "--name-only", "HEAD")
		return strings.Contains(files, "view.md") && strings.Contains(files, "tool.md")
	})
	lines := strings.Split(git(t, clone, "log", "--format=%an|%s", head+"..HEAD"), "\n")
	if len(lines) != 3 || lines[2] != "person|person: note" || !strings.HasPrefix(lines[0], "sw|") || !strings.HasPrefix(lines[1], "sw|") {
		t.Fatalf("history since the editor opened = %q, want the person's commit then the agent's two writes", lines)
	}
	bare := srv.SharedRepoDir("team")
	waitFor(t, 15*time.Second, "pushed", func() bool {
		p.turn("sw")
		out, _ := gitTry(bare, "rev-parse", "main")
		return out == git(t, clone, "rev-parse", "HEAD")
	})
	for rel, want := range map[string]string{"person.md": "the person's note", "view.md": "from the view", "tool.md": "from the tool"} {
		if got := git(t, bare, "show", "main:"+rel); got != want {
			t.Fatalf("main:%s = %q, want %q", rel, got, want)
		}
	}
	waitFor(t, 10*time.Second, "the view gets the person's file", func() bool {
		return readView(home, "sw", "team", "person.md") == "the person's note\n"
	})
	if st := git(t, clone, "status", "--porcelain"); st != "" {
		t.Fatalf("git status in the shared clone = %q", st)
	}
	waitRepackIdle(t, clone)
	git(t, clone, "fsck", "--strict")
	git(t, bare, "fsck", "--strict")
}
