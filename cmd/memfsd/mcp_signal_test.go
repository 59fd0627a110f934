package main_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestMCP_SIGTERMPushesWithinBound: `memfsd mcp` with the agent in its
// own process, writes not pushed yet (--push-idle 1h): SIGTERM pushes
// them and exits 0 within --shutdown-timeout.
func TestMCP_SIGTERMPushesWithinBound(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := filepath.Join(t.TempDir(), "home")
	// The process's pipes are ours (not the SDK's CommandTransport, which
	// would wait for the process itself): this test waits for its exit.
	cmd := execMemfsd("mcp", "--home", home, "--base-url", srv.URL, "--agent", "me", "--push-idle", "1h", "--shutdown-timeout", "10s")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("memfsd mcp log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, name := range []string{"a", "b"} {
		if text, isErr := mcpCall(t, cs, "memory", map[string]any{"command": "create", "path": "/memories/" + name + ".md", "file_text": name + "\n"}); isErr {
			t.Fatal(text)
		}
	}
	local := localHead(t, home, "me")
	if remoteMain(srv, "me") == local {
		t.Fatal("pushed before SIGTERM (--push-idle 1h)")
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("memfsd mcp still running 15 s after SIGTERM (--shutdown-timeout 10s)")
	}
	took := time.Since(start)
	if got := remoteMain(srv, "me"); got != local {
		t.Fatalf("after SIGTERM the remote is at %s, the agent at %s", got, local)
	}
	t.Logf("SIGTERM to exit with the push: %s", took.Round(time.Millisecond))
}
