package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/mcpserver"
)

// httpClient connects a Go SDK client to url; stream: with its GET stream
// open (the SDK's default).
func httpClient(t *testing.T, url string, stream bool) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bounds", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: !stream, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestHTTP_SubscriptionsBounded: a session subscribes to at most
// MaxSubscriptions resources (the refusal names the flag and the context
// URI as the way out); subscribing again to one it has costs nothing, an
// unsubscribe makes room, and a URI that is not a memory resource is
// refused.
func TestHTTP_SubscriptionsBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour, MaxSubscriptions: 3}, 0)
	ts := httptest.NewServer(r.host.Handler())
	t.Cleanup(ts.Close)
	cs, err := httpClient(t, ts.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub := func(uri string) error { return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) }
	for _, uri := range []string{"memory:///a.md", "memory:///b.md", mcpserver.ContextURI, "memory:///a.md"} {
		if err := sub(uri); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	err = sub("memory:///c.md")
	if err == nil || !strings.Contains(err.Error(), "--mcp-max-subscriptions") || !strings.Contains(err.Error(), mcpserver.ContextURI) {
		t.Fatalf("a fourth subscription: %v", err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "memory:///b.md"}); err != nil {
		t.Fatal(err)
	}
	if err := sub("memory:///c.md"); err != nil {
		t.Fatalf("subscribe after an unsubscribe: %v", err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "memory:///c.md"}); err != nil {
		t.Fatal(err)
	}
	if err := sub("file:///etc/passwd"); err == nil || !strings.Contains(err.Error(), "not a memory resource") {
		t.Fatalf("subscribe to a URI that is not memory's: %v", err)
	}
}

// TestHTTP_IdleSessionsEnd: past MaxSessions a new session is refused
// (429); a session with no
// request for SessionIdle is ended, which makes room, but one whose GET
// stream is open is not idle.
func TestHTTP_IdleSessionsEnd(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour, MaxSessions: 2, SessionIdle: 2 * time.Second}, 0)
	ts := httptest.NewServer(r.host.Handler())
	t.Cleanup(ts.Close)
	streaming, err := httpClient(t, ts.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpClient(t, ts.URL, false); err != nil {
		t.Fatal(err)
	}
	// The SDK's client takes 429 for a transient error and does not read
	// the body (cmd/memfsd's TestMCP_SessionsBoundedPerAgent reads it).
	if _, err := httpClient(t, ts.URL, false); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("a third session with MaxSessions 2: %v", err)
	}
	waitFor(t, "the idle session ended, making room", func() bool {
		_, err := httpClient(t, ts.URL, false)
		return err == nil
	})
	time.Sleep(3 * time.Second)
	if _, err := streaming.ListResources(context.Background(), nil); err != nil {
		t.Fatalf("the session with its stream open was ended: %v", err)
	}
}

// post sends one JSON-RPC message to url (sid: the session's) and reads
// the whole answer.
func post(t *testing.T, url, sid, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil, ""
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

// TestHTTP_SessionRequestsBounded: one session's requests in flight are
// bounded (16): 24 memory_sync calls at once, each waiting on a push that
// hangs, get 16 in flight and 8 answered 429 with a JSON-RPC error.
func TestHTTP_SessionRequestsBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour, SyncWait: 3 * time.Second}, 0)
	ts := httptest.NewServer(r.host.Handler())
	t.Cleanup(ts.Close)
	code, hdr, body := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if code != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	if code, _, body := post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	r.call(t, "memory", map[string]any{"command": "create", "path": "/memories/pending.md", "file_text": "not pushed yet\n"})
	f := r.srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/me/state.git/git-receive-pack", Count: -1, Hang: true})
	defer f.Release()
	var wg sync.WaitGroup
	var refused atomic.Int32
	var refusal atomic.Value
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, body := post(t, ts.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_sync","arguments":{}}}`, 10+i))
			if code == http.StatusTooManyRequests {
				refused.Add(1)
				refusal.Store(body)
			}
		}()
	}
	wg.Wait()
	if got := refused.Load(); got != 8 {
		t.Fatalf("%d of 24 requests at once refused, want 8 (16 in flight)", got)
	}
	if b, _ := refusal.Load().(string); !strings.Contains(b, `"error"`) || !strings.Contains(b, "16 requests in flight") {
		t.Fatalf("the refusal: %s", b)
	}
}
