package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/testgit"
	"github.com/memfsd/memfsd/mcpserver"
	"github.com/memfsd/memfsd/memtool"
)

// TestTools_LettaCodeDialect: with the letta-code dialect the session's
// tools are letta-code's memory and memory_apply_patch beside the
// read-only ones and memory_sync; a letta-code create and a patch are
// commits with letta-code's subjects and reasons.
func TestTools_LettaCodeDialect(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour, Dialect: memtool.LettaCode}, 0)
	tools, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil {
			t.Errorf("%s: no input schema", tl.Name)
		}
	}
	if got := strings.Join(names, ","); got != "memory,memory_apply_patch,memory_history,memory_search,memory_show,memory_sync" {
		t.Fatalf("tools = %s", got)
	}
	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "reason": "Track todos", "file_path": "notes/todo.md", "description": "Todos", "file_text": "- call Bob\n"}); isErr {
		t.Fatalf("letta-code create: %s", text)
	}
	patch := "*** Begin Patch\n*** Update File: notes/todo.md\n@@\n-- call Bob\n+- call Alice\n*** End Patch\n"
	if text, isErr := r.call(t, "memory_apply_patch", map[string]any{"reason": "Alice now", "input": patch}); isErr {
		t.Fatalf("memory_apply_patch: %s", text)
	}
	log := testLog(t, r, "--format=%s|%b")
	for _, want := range []string{"memory: create notes/todo.md|Track todos", "Alice now"} {
		if !strings.Contains(log, want) {
			t.Errorf("git log lacks %q:\n%s", want, log)
		}
	}
	if show, isErr := r.call(t, "memory_show", map[string]any{"path": "notes/todo.md"}); isErr || !strings.Contains(show, "- call Alice") {
		t.Errorf("after the patch: %v %q", isErr, show)
	}
}

// TestResources_Paginated: resources/list comes in pages of PageSize with
// a cursor, and the pages together hold every file once.
func TestResources_Paginated(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour, PageSize: 3}, 0)
	for i := range 7 {
		if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": fmt.Sprintf("/memories/p/f%d.md", i), "file_text": "x\n"}); isErr {
			t.Fatal(text)
		}
	}
	seen := map[string]int{}
	pages := 0
	waitFor(t, "the seven files listed", func() bool {
		clear(seen)
		pages = 0
		cursor := ""
		for {
			res, err := r.cs.ListResources(context.Background(), &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(res.Resources) > 3 {
				t.Fatalf("a page of %d resources, PageSize 3", len(res.Resources))
			}
			for _, x := range res.Resources {
				seen[x.URI]++
			}
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		for i := range 7 {
			if seen[fmt.Sprintf("memory:///p/f%d.md", i)] != 1 {
				return false
			}
		}
		return true
	})
	if pages < 4 {
		t.Errorf("%d resources in %d pages of 3", len(seen), pages)
	}
}

// TestSession_DisconnectPushes: what a session wrote is pushed when its
// client disconnects, long before PushIdle.
func TestSession_DisconnectPushes(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 0)
	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/bye.md", "file_text": "x\n"}); isErr {
		t.Fatal(text)
	}
	local := r.localHead(t)
	if r.remoteHead(t) == local {
		t.Fatal("pushed before the disconnect (PushIdle is an hour)")
	}
	r.cs.Close()
	waitFor(t, "the push at the disconnect", func() bool { return r.remoteHead(t) == local })
}

// TestTools_IdempotencyKeyInMeta: a tools/call whose _meta holds
// memfsd/idempotency-key is applied once; the same key again answers the
// first answer and makes no commit; a key that is not a string is an
// isError result.
func TestTools_IdempotencyKeyInMeta(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 0)
	call := func(meta mcp.Meta, text string) (string, bool) {
		res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Meta: meta, Name: "memory",
			Arguments: map[string]any{"command": "str_replace", "path": "/memories/n.md", "old_str": "a", "new_str": text}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/n.md", "file_text": "a\n"}); isErr {
		t.Fatal(text)
	}
	before := strings.Count(r.log(t), "\n")
	key := mcp.Meta{mcpserver.IdempotencyMeta: "k-1"}
	first, isErr := call(key, "b")
	if isErr {
		t.Fatal(first)
	}
	again, isErr := call(key, "b")
	if isErr || again != first {
		t.Fatalf("the same key again: %v %q, first %q", isErr, again, first)
	}
	if n := strings.Count(r.log(t), "\n") - before; n != 1 {
		t.Fatalf("%d commits for one key sent twice", n)
	}
	if text, isErr := call(mcp.Meta{mcpserver.IdempotencyMeta: 5}, "c"); !isErr || !strings.Contains(text, "want a string") {
		t.Fatalf("a number as the key: %v %q", isErr, text)
	}
}

func testLog(t *testing.T, r *rig, format string) string {
	t.Helper()
	return testgit.Run(t, r.a.Dir(), "log", format)
}
