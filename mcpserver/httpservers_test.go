package mcpserver_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/mcpserver"
)

// TestHTTP_ServersEndWithTheirSessions: streamable HTTP makes a server per
// request it looks at; the host keeps in step (and tells of every changed
// file) only the servers of sessions still open, not one per request for
// the daemon's life. 30 tool calls over one session, for a 2026-07-28 and
// a 2025-06-18 client: at most a few servers while it is open, none once
// it closed but the one 2026-07-28 requests share; a subscription still
// told of a write.
func TestHTTP_ServersEndWithTheirSessions(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 0)
	ts := httptest.NewServer(r.host.Handler())
	t.Cleanup(ts.Close)
	base := mcpserver.ServerCount(r.host) // the rig's in-memory session
	for _, version := range []string{"", "2025-06-18"} {
		u := &updates{}
		c := mcp.NewClient(&mcp.Implementation{Name: "http", Version: "1"}, &mcp.ClientOptions{ResourceUpdatedHandler: u.handler})
		ctx := context.Background()
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		uri := "memory:///http" + version + ".md"
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory", Arguments: map[string]any{"command": "view", "path": "/memories"}})
			if err != nil || res.IsError {
				t.Fatalf("call %d: %v %+v", i, err, res)
			}
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory", Arguments: map[string]any{"command": "create", "path": "/memories/http" + version + ".md", "file_text": "x\n"}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "notifications/resources/updated for "+uri, func() bool { return u.has(uri) })
		open := mcpserver.ServerCount(r.host) - base
		t.Logf("protocol %q: %d servers kept in step after 32 requests", version, open)
		if open > 3 {
			t.Errorf("protocol %q: %d servers kept in step for one open session after 32 requests", version, open)
		}
		cs.Close()
		waitFor(t, fmt.Sprintf("protocol %q: the session's servers let go", version), func() bool { return mcpserver.ServerCount(r.host) <= base+1 })
	}
}

// updates records the URIs a client was told changed.
type updates struct {
	mu   sync.Mutex
	uris []string
}

func (u *updates) handler(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	u.uris = append(u.uris, req.Params.URI)
	u.mu.Unlock()
}

func (u *updates) has(uri string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Contains(u.uris, uri)
}
