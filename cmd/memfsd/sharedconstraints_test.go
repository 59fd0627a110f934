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

// TestShared_LettaConstraints (SPEC §9), through the binary: a shared
// repository in letta-code's memfs v2 layout with letta-code's limits in
// .memfs.config.json (its shared-memory policy takes limits from that
// file only) gets letta-code's tree rules from an attached
// memfsd agent's every route. The tool's --shared create of a depth-3
// file is refused in letta-code's words; a 25,000-character file written
// in the agent's view is held there with a constraints_held reminder and
// never reaches the shared branch, where letta-code's pre-commit hook
// would then refuse every commit of the letta-code agents sharing it.
// Before, both were committed and pushed to main.
func TestShared_LettaConstraints(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	seedShared(t, srv, "team", map[string]string{
		"MEMORY.md":          "# Memory\n",
		"a.md":               "---\nname: a\ndescription: a note\n---\nhello\n",
		"notes/MEMORY.md":    "# notes\n",
		".memfs.config.json": "{\n  \"version\": 1,\n  \"maxDepth\": 2,\n  \"maxFileCharacters\": 20000,\n  \"maxCoreMemoryCharacters\": 65536\n}\n",
	})
	p := startDaemon(t, srv, home, "--agent", "w")
	if code, err := p.adminCall("PUT", "/v1/agents/w/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
		t.Fatalf("attach: %d %v", code, err)
	}
	waitFor(t, 10*time.Second, "w's view holds the shared tip", func() bool {
		return strings.Contains(readView(home, "w", "team", "a.md"), "hello")
	})

	// The tool: a depth-3 file refused.
	deep, _ := json.Marshal(map[string]string{"command": "create", "path": "/memories/notes/b/c/deep.md", "file_text": "---\nname: deep\ndescription: deep\n---\nx\n"})
	if out, isErr := p.sharedTool("w", "team", string(deep)); !isErr || !strings.Contains(out, "depth 3 exceeds maxDepth 2") {
		t.Fatalf("depth-3 create answered %v %q, want letta-code's refusal", isErr, out)
	}
	// The view: a 25,000-character file held, with a reminder.
	big := "---\nname: big\ndescription: big\n---\n"
	big += strings.Repeat("x", 25000-len(big))
	view := filepath.Join(home, "agents", "w", "shared", "team")
	if err := os.WriteFile(filepath.Join(view, "notes", "big.md"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	var seen string
	waitFor(t, 8*time.Second, "w's constraints_held reminder", func() bool {
		var rem struct {
			Reminders []struct{ Kind, Text string } `json:"reminders"`
		}
		p.get("/v1/agents/w/reminders", &rem)
		seen += toJSON(rem)
		return strings.Contains(seen, "constraints_held") && strings.Contains(seen, "notes/big.md") && strings.Contains(seen, "25000 characters exceeds 20000 from maxFileCharacters")
	})
	if tr := p.turn("w"); tr.Outcome == "failed" {
		t.Fatalf("turn: %+v", tr)
	}
	bare := srv.SharedRepoDir("team")
	if files := git(t, bare, "ls-tree", "-r", "--name-only", "main"); strings.Contains(files, "big.md") || strings.Contains(files, "deep.md") {
		t.Fatalf("main breaks letta-code's limits:\n%s", files)
	}
	if got := readView(home, "w", "team", "notes/big.md"); got != big {
		t.Fatalf("w's view lost its write (%d characters)", len(got))
	}
}
