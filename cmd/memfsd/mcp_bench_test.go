package main_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/sidebyside"
)

// BenchmarkMCPWrite: one memory write through stdio MCP (`memfsd mcp`,
// in-process, and forwarded to a daemon's agent socket), and through
// streamable HTTP on the agent's socket (/mcp, the forwarded session's
// second hop, without the first), against the same write through the
// socket API, side by side (memfsd-ms is MCP's, cli-ms the API's).
func BenchmarkMCPWrite(b *testing.B) {
	for _, via := range []string{"in-process", "daemon", "http"} {
		b.Run("via="+via, func(b *testing.B) {
			srv := gitserver.New(b, token)
			home := filepath.Join(b.TempDir(), "home")
			p := startDaemon(b, srv, home, "--agent", "api", "--agent", "viad", "--log-level", "warn", "--mcp-push-idle", "1h")
			id, args := "viad", []string{}
			if via == "in-process" {
				id, args = "mcp", []string{"--in-process", "--push-idle", "1h", "--log-level", "warn"}
			}
			var cs *mcp.ClientSession
			if via == "http" {
				cs = benchMCPHTTP(b, filepath.Join(home, "agents", id, "memfsd.sock"))
			} else {
				cs = benchMCPSession(b, srv, home, id, args...)
			}
			var ours, theirs []time.Duration
			const warmup = 5
			b.ResetTimer()
			for i := -warmup; i < b.N; i++ {
				path := fmt.Sprintf("/memories/bench/w%05d.md", i+warmup)
				text := fmt.Sprintf("benchmark write %d\n", i)
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory", Arguments: map[string]any{"command": "create", "path": path, "file_text": text}})
				if err != nil || res.IsError {
					b.Fatalf("mcp write: %v %+v", err, res)
				}
				t1 := time.Now()
				var out struct {
					IsError bool `json:"is_error"`
				}
				code, err := p.call("POST", "/v1/agents/api/memory", fmt.Sprintf(`{"command":"create","path":%q,"file_text":%q}`, path, text), &out)
				if err != nil || code != 200 || out.IsError {
					b.Fatalf("api write: %d %v %+v", code, err, out)
				}
				t2 := time.Now()
				if i >= 0 {
					ours, theirs = append(ours, t1.Sub(t0)), append(theirs, t2.Sub(t1))
				}
			}
			b.StopTimer()
			sidebyside.Report(b, ours, theirs)
		})
	}
}

func benchMCPSession(b *testing.B, srv *gitserver.Server, home, id string, args ...string) *mcp.ClientSession {
	b.Helper()
	full := append([]string{"mcp", "--home", home, "--base-url", srv.URL, "--agent", id}, args...)
	cmd := execMemfsd(full...)
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// benchMCPHTTP is a Go SDK session on /mcp of the agent socket sock.
func benchMCPHTTP(b *testing.B, sock string) *mcp.ClientSession {
	b.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://memfsd/mcp", HTTPClient: hc}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}
