package main_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCP_ListenTCPPerAgentToken: `memfsd run --mcp-listen 127.0.0.1:PORT`
// serves each agent's MCP at /agents/<id>/mcp to that agent's own token
// (<home>/agents/<id>/mcp-token, made at start, 0600): an MCP client that
// speaks HTTP (the TypeScript SDK, the Inspector, Claude Code) reaches its
// agent, and a1's token opens nothing of a2's.
func TestMCP_ListenTCPPerAgentToken(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := filepath.Join(t.TempDir(), "home")
	addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	startDaemon(t, srv, home, "--agent", "a1", "--agent", "a2", "--mcp-listen", addr)

	tokens := map[string]string{}
	for _, id := range []string{"a1", "a2"} {
		p := filepath.Join(home, "agents", id, "mcp-token")
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s's token file: %v %v", id, fi, err)
		}
		data, _ := os.ReadFile(p)
		tokens[id] = strings.TrimSpace(string(data))
		if len(tokens[id]) != 64 {
			t.Fatalf("%s's token: %q, want 64 hex digits", id, tokens[id])
		}
	}
	if tokens["a1"] == tokens["a2"] {
		t.Fatal("a1 and a2 have the same token")
	}

	base := "http://" + addr
	post := func(path, tok string) (int, string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	for _, tc := range []struct {
		path, tok string
		code      int
	}{
		{"/agents/a2/mcp", tokens["a1"], 401}, // another agent's token
		{"/agents/a1/mcp", tokens["a2"], 401},
		{"/agents/a2/mcp", "", 401},
		{"/agents/a2/mcp", tokens["a2"] + "x", 401},
		{"/agents/a3/mcp", tokens["a1"], 401}, // not managed
		{"/agents/../a1/mcp", tokens["a1"], 404},
		{"/agents/a1/mcp/x", tokens["a1"], 404},
		{"/mcp", tokens["a1"], 404},
		{"/agents/a1/mcp", tokens["a1"], 200},
		{"/agents/a2/mcp", tokens["a2"], 200},
	} {
		code, body := post(tc.path, tc.tok)
		if code != tc.code {
			t.Errorf("POST %s with %s: %d %s, want %d", tc.path, map[bool]string{true: "no token", false: "a token"}[tc.tok == ""], code, body, tc.code)
		}
		if code == 401 && !strings.Contains(body, "own token") {
			t.Errorf("POST %s: 401 without saying which token: %s", tc.path, body)
		}
	}

	// A Go SDK client with a1's token: a1's memory, written by the daemon.
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-tcp", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/agents/a1/mcp", HTTPClient: &http.Client{Transport: bearer{tokens["a1"]}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, isErr := mcpCall(t, cs, "memory", map[string]any{"command": "create", "path": "/memories/tcp.md", "file_text": "over tcp\n"}); isErr {
		t.Fatal(text)
	}
	if !strings.Contains(git(t, memDir(home, "a1"), "log", "--format=%s"), "memory: create tcp.md") {
		t.Fatal("the write over --mcp-listen is not a commit of a1's")
	}
	if _, err := os.Stat(filepath.Join(memDir(home, "a2"), "tcp.md")); err == nil {
		t.Fatal("a1's write landed in a2's folder")
	}
}

// TestMCP_ListenRefusesNetwork: --mcp-listen on an address other than
// loopback (or a unix socket) is refused at start, naming the way out.
func TestMCP_ListenRefusesNetwork(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	for addr, want := range map[string]string{
		fmt.Sprintf("0.0.0.0:%d", freeTCPPort(t)):        "--insecure-listen",
		"unix://" + filepath.Join(t.TempDir(), "m.sock"): "memfsd.sock",
	} {
		code, out := runCLI(t, srv, t.TempDir(), "run", "--agent", "x", "--mcp-listen", addr)
		if code == 0 || !strings.Contains(out, "--mcp-listen") || !strings.Contains(out, want) {
			t.Errorf("--mcp-listen %s: exit %d\n%s", addr, code, out)
		}
	}
}
