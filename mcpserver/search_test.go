package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/mcpserver"
)

// TestTools_MemorySearch: memory_search finds a write made through the
// memory tool, shows a folder's overview, and answers bad input with
// isError and no commit.
func TestTools_MemorySearch(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 0)
	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/recipes/bread.md", "file_text": "---\ndescription: Sourdough bread\n---\nFeed the starter with rye flour.\n"}); isErr {
		t.Fatalf("create: %s", text)
	}
	text, isErr := r.call(t, "memory_search", map[string]any{"query": "rye starter", "limit": 3})
	if isErr || !strings.Contains(text, "/memories/recipes/bread.md  Sourdough bread") || !strings.Contains(text, "via recipes/") || !strings.Contains(text, "4\tFeed the starter with rye flour.") {
		t.Fatalf("search: %v %q", isErr, text)
	}
	if text, isErr = r.call(t, "memory_search", map[string]any{"folder": "/memories/recipes"}); isErr || text != "/memories/recipes: 1 file, 0 folders\n- bread.md — Sourdough bread\n" {
		t.Fatalf("folder: %v %q", isErr, text)
	}
	before := r.log(t)
	for _, args := range []map[string]any{
		{"query": ""}, {"query": "???"}, {"query": "\xff"}, {"query": strings.Repeat("a", 2000)},
		{"query": "a", "limit": 1000}, {"query": "a", "folder": "x"}, {"folder": "/etc"}, {"query": 5}, {"query": "a", "extra": 1},
	} {
		if text, isErr := r.call(t, "memory_search", args); !isErr || text == "" {
			t.Errorf("%.40v: isError=%v %q", args, isErr, text)
		}
	}
	if text, isErr := r.call(t, "memory_search", map[string]any{"query": "xyzzy plugh"}); isErr || !strings.Contains(text, "No memory file matches") {
		t.Errorf("no match: %v %q", isErr, text)
	}
	if after := r.log(t); after != before {
		t.Fatalf("memory_search made commits:\n%s", after)
	}
}
