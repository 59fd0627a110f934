package main_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// mcpStdio starts `memfsd mcp` (args after the home and remote flags) as a
// Go SDK client's subprocess and returns its session.
func mcpStdio(t *testing.T, srv *gitserver.Server, home string, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	full := append([]string{"mcp", "--home", home, "--base-url", srv.URL}, args...)
	cmd := exec.Command(binPath, full...)
	cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	logs := &syncBuffer{}
	cmd.Stderr = logs
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to memfsd mcp: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("memfsd mcp log:\n%s", logs.String())
		}
	})
	return cs, cmd
}

// execMemfsd is the binary's command with the test token.
func execMemfsd(args ...string) *exec.Cmd {
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	return cmd
}

// mcpSocket connects a Go SDK client to /mcp on the unix socket sock.
func mcpSocket(t *testing.T, sock string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://memfsd/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func remoteMain(srv *gitserver.Server, id string) string {
	out, _ := gitTry(srv.RepoDir(id), "rev-parse", "refs/heads/main")
	return strings.TrimSpace(out)
}

func localHead(t testing.TB, home, id string) string {
	return strings.TrimSpace(git(t, memDir(home, id), "rev-parse", "HEAD"))
}

// TestMCP_StdioInProcess: no daemon; `memfsd mcp` clones, commits per
// write, refuses a read-only block with the API's text, pushes after the
// idle time and on memory_sync.
func TestMCP_StdioInProcess(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := filepath.Join(t.TempDir(), "home")
	cs, _ := mcpStdio(t, srv, home, "--agent", "me", "--push-idle", "300ms")
	steps := []map[string]any{
		{"command": "create", "path": "/memories/notes.md", "file_text": "alpha\nbeta\n"},
		{"command": "str_replace", "path": "/memories/notes.md", "old_str": "beta", "new_str": "gamma"},
		{"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": "top"},
		{"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/topics/notes.md"},
	}
	for _, s := range steps {
		if text, isErr := mcpCall(t, cs, "memory", s); isErr {
			t.Fatalf("%v: %s", s, text)
		}
	}
	text, isErr := mcpCall(t, cs, "memory", map[string]any{"command": "view", "path": "/memories/topics/notes.md"})
	if isErr || !strings.Contains(text, "     1\ttop\n     2\talpha\n     3\tgamma") {
		t.Fatalf("view: %q", text)
	}
	text, isErr = mcpCall(t, cs, "memory", map[string]any{"command": "create", "path": "/memories/system/human.md", "file_text": "hijack"})
	if !isErr || !strings.Contains(text, "/memories/system/human.md is read-only and cannot be modified") {
		t.Fatalf("human.md: isError=%v %q", isErr, text)
	}
	log := git(t, memDir(home, "me"), "log", "--format=%s")
	for _, want := range []string{"memory: create notes.md", "memory: str_replace notes.md", "memory: insert notes.md", "memory: rename notes.md"} {
		if !strings.Contains(log, want) {
			t.Errorf("git log lacks %q:\n%s", want, log)
		}
	}
	local := localHead(t, home, "me")
	waitFor(t, 10*time.Second, "the push after --push-idle", func() bool { return remoteMain(srv, "me") == local })

	// memory_sync pushes at once (the idle push would come 300ms later).
	if text, isErr := mcpCall(t, cs, "memory", map[string]any{"command": "create", "path": "/memories/b.md", "file_text": "b\n"}); isErr {
		t.Fatal(text)
	}
	// (pushed, or clean when the idle push armed by an earlier call won.)
	if text, isErr := mcpCall(t, cs, "memory_sync", map[string]any{}); isErr || !strings.HasPrefix(text, "sync: pushed") && !strings.HasPrefix(text, "sync: clean") {
		t.Fatalf("memory_sync: %v %q", isErr, text)
	}
	if remoteMain(srv, "me") != localHead(t, home, "me") {
		t.Fatal("memory_sync answered pushed; the remote is behind")
	}
}

// TestMCP_KillNineKeepsAcknowledgedWrites: an answered write is a commit
// on disk; kill -9 before any push loses nothing.
func TestMCP_KillNineKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := filepath.Join(t.TempDir(), "home")
	cs, cmd := mcpStdio(t, srv, home, "--agent", "me", "--push-idle", "1h")
	for i, name := range []string{"a", "b", "c"} {
		if text, isErr := mcpCall(t, cs, "memory", map[string]any{"command": "create", "path": "/memories/" + name + ".md", "file_text": strings.Repeat(name, i+1) + "\n"}); isErr {
			t.Fatal(text)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cs.Close() // waits for the process
	for i, name := range []string{"a", "b", "c"} {
		got := git(t, memDir(home, "me"), "show", "HEAD:"+name+".md")
		if got != strings.Repeat(name, i+1) { // git() trims the output

			t.Errorf("%s.md at HEAD after kill -9: %q", name, got)
		}
	}
	if out, err := gitTry(memDir(home, "me"), "fsck", "--strict"); err != nil {
		t.Fatalf("fsck after kill -9: %v\n%s", err, out)
	}
}

// TestMCP_ThroughDaemon: with a daemon, `memfsd mcp` goes through the
// agent's own socket (the daemon commits and pushes); /mcp is served on
// each agent's own socket and reaches that agent only, never on the shared
// or operator socket.
func TestMCP_ThroughDaemon(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := filepath.Join(t.TempDir(), "home")
	startDaemon(t, srv, home, "--agent", "a1", "--agent", "a2", "--mcp-push-idle", "300ms")

	cs1, _ := mcpStdio(t, srv, home, "--agent", "a1")
	if text, isErr := mcpCall(t, cs1, "memory", map[string]any{"command": "create", "path": "/memories/one.md", "file_text": "one\n"}); isErr {
		t.Fatal(text)
	}
	if !strings.Contains(git(t, memDir(home, "a1"), "log", "--format=%s"), "memory: create one.md") {
		t.Fatal("the write did not go through the daemon's agent a1")
	}
	local := localHead(t, home, "a1")
	waitFor(t, 10*time.Second, "the daemon's idle push", func() bool { return remoteMain(srv, "a1") == local })
	text, isErr := mcpCall(t, cs1, "memory", map[string]any{"command": "str_replace", "path": "/memories/system/persona.md", "old_str": "a", "new_str": "b"})
	if !isErr || !strings.Contains(text, "/memories/system/persona.md is read-only and cannot be modified") {
		t.Fatalf("persona through the daemon: %v %q", isErr, text)
	}

	// Streamable HTTP on a2's own socket: a2's memory, nothing of a1's.
	cs2, err := mcpSocket(t, filepath.Join(home, "agents", "a2", "memfsd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := mcpCall(t, cs2, "memory", map[string]any{"command": "create", "path": "/memories/two.md", "file_text": "two\n"}); isErr {
		t.Fatal(text)
	}
	if _, err := os.Stat(filepath.Join(memDir(home, "a2"), "two.md")); err != nil {
		t.Fatalf("a2's write is not in a2's folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(memDir(home, "a1"), "two.md")); err == nil {
		t.Fatal("a2's write landed in a1's folder")
	}
	text, _ = mcpCall(t, cs2, "memory", map[string]any{"command": "view", "path": "/memories"})
	if strings.Contains(text, "one.md") {
		t.Fatalf("a2's session sees a1's memory:\n%s", text)
	}
	for _, path := range []string{"/memories/../../a1/memory/one.md", "/memories/%2e%2e/a1/memory/one.md"} {
		text, isErr := mcpCall(t, cs2, "memory", map[string]any{"command": "view", "path": path})
		if !isErr || strings.Contains(text, "one\n") {
			t.Fatalf("a2 reached %s: %v %q", path, isErr, text)
		}
	}
	// Not on the shared socket nor the operator's.
	for _, sock := range []string{"memfsd.sock", "admin.sock"} {
		if _, err := mcpSocket(t, filepath.Join(home, sock)); err == nil {
			t.Errorf("%s serves MCP", sock)
		}
	}
}
