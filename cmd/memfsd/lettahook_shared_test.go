package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestShared_LettaHookOnPeerClone (issue 29, shared repositories): a
// shared repository with letta-code's limits in .memfs.config.json and
// letta-code's own pre-commit hook in a letta-code agent's clone of it
// (installSharedMemoryPreCommitHook: the shared-memory policy, under which
// every .md file is judged, with no root MEMORY.md). An attached memfsd
// agent's depth-3 file and 20,001-character file, through the tool and
// written in its view, never reach main, so the letta-code agent's next
// commit passes its hook; the same files committed there are refused by
// the hook.
func TestShared_LettaHookOnPeerClone(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	peer := seedShared(t, srv, "team", map[string]string{
		".memfs.config.json": "{\n  \"version\": 1,\n  \"maxDepth\": 2,\n  \"maxFileCharacters\": 20000,\n  \"maxCoreMemoryCharacters\": 65536\n}\n",
		"notes/a.md":         v2Text("notes/a.md", 100),
	})
	installLettaHook(t, peer, "shared-memory")
	p := startDaemon(t, srv, home, "--agent", "w")
	if code, err := p.adminCall("PUT", "/v1/agents/w/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
		t.Fatalf("attach: %d %v", code, err)
	}
	waitFor(t, 10*time.Second, "w's view holds the shared tip", func() bool {
		return readView(home, "w", "team", "notes/a.md") != "" && !strings.HasPrefix(readView(home, "w", "team", "notes/a.md"), "<")
	})
	deep, _ := json.Marshal(map[string]string{"command": "create", "path": "/memories/notes/b/c/deep.md", "file_text": v2Text("deep.md", 60)})
	if out, isErr := p.sharedTool("w", "team", string(deep)); !isErr || !strings.Contains(out, "depth 3 exceeds maxDepth 2") {
		t.Fatalf("depth-3 create answered %v %q, want letta-code's refusal", isErr, out)
	}
	view := filepath.Join(home, "agents", "w", "shared", "team")
	os.MkdirAll(filepath.Join(view, "notes", "x", "y"), 0o700)
	os.WriteFile(filepath.Join(view, "notes", "x", "y", "z.md"), []byte(v2Text("z.md", 60)), 0o600)
	os.WriteFile(filepath.Join(view, "notes", "big.md"), []byte(v2Text("big.md", 20001)), 0o600)
	os.WriteFile(filepath.Join(view, "notes", "ok.md"), []byte(v2Text("ok.md", 20000)), 0o600)
	bare := srv.SharedRepoDir("team")
	waitFor(t, 15*time.Second, "w's write within the limits on main", func() bool {
		p.turn("w")
		_, err := gitTry(bare, "cat-file", "-e", "main:notes/ok.md")
		return err == nil
	})
	time.Sleep(time.Second) // the view's other writes had their round too
	p.turn("w")
	if files := git(t, bare, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "big.md") || strings.Contains(files, "deep.md") || strings.Contains(files, "z.md") {
		t.Fatalf("main breaks letta-code's limits:\n%s", files)
	}
	git(t, peer, "pull", "-q", "--ff-only")
	os.WriteFile(filepath.Join(peer, "notes", "letta.md"), []byte(v2Text("letta.md", 80)), 0o600)
	if out, ok := lettaCommit(t, peer, "letta: after memfsd"); !ok {
		t.Fatalf("letta-code's hook refuses its next commit on the shared repository:\n%s\nmain:\n%s", out, git(t, bare, "ls-tree", "-r", "-l", "main"))
	}
	git(t, peer, "push", "-q", "origin", "HEAD:main")
	for rel, want := range map[string]string{
		"notes/x/y/z.md": "notes/x/y/z.md: depth 3 exceeds maxDepth 2",
		"notes/big.md":   "notes/big.md: 20001 characters exceeds 20000 from maxFileCharacters",
	} {
		text := v2Text(rel, 60)
		switch rel {
		case "notes/big.md":
			text = v2Text(rel, 20001)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(peer, rel)), 0o700)
		os.WriteFile(filepath.Join(peer, rel), []byte(text), 0o600)
		if out, ok := lettaCommit(t, peer, "letta: past the limits"); ok || !strings.Contains(out, want) {
			t.Fatalf("letta-code's hook on %s: committed %v, said:\n%s\nwant %q", rel, ok, out, want)
		}
		git(t, peer, "reset", "-q", "--hard", "HEAD")
		git(t, peer, "clean", "-qfd")
	}
}
