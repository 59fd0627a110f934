package mcpserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/memfsd/memfsd/mcpserver"
)

// The idle push after a tool call fails (the remote answers 503 more often
// than one sync retries: the rig's budget is 300 ms); the client says
// nothing more. The agent's sync loop retries the push in the background
// and the write reaches the remote once the server recovers (SPEC §13).
// Without the background retry the host pushes again only after the next
// tool call or at the session's end: the write stays local.
func TestTools_IdlePushRetriedInTheBackground(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: 100 * time.Millisecond}, 0)
	const failures = 40
	fault := r.srv.FailNext("git-receive-pack", failures, http.StatusServiceUnavailable)
	if text, isErr := r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/owed.md", "file_text": "owed\n"}); isErr {
		t.Fatalf("create: %s", text)
	}
	local := r.localHead(t)
	waitFor(t, "the write on the remote with no further call", func() bool { return r.remoteHead(t) == local })
	if n := fault.Hits.Load(); n != failures {
		t.Fatalf("the remote failed %d pushes, want %d", n, failures)
	}
	waitFor(t, "the status clear", func() bool {
		st := r.a.Status(false)
		return st.LastError == nil && st.PushRetry == nil
	})
}
