package main_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/unixsock"
)

// Scenarios of SPEC §8 "one agent per channel": each managed agent has its
// own socket, <home>/agents/<id>/memfsd.sock, serving only its routes.

func agentSock(home, id string) string { return filepath.Join(home, "agents", id, "memfsd.sock") }

// sockClient dials a unix socket of any length.
func sockClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return unixsock.Dial(ctx, path)
	}}}
}

// checkSocketFile: a socket, mode 0600, in a 0700 folder.
func checkSocketFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agent socket %s: %v %v, want a socket with mode 0600", path, fi, err)
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("agent socket folder: %v %v, want 0700", di, err)
	}
}

// snapshot is what must not change in an agent's folder and remote: the
// work tree's files and contents, HEAD, and the remote's main.
func snapshot(t *testing.T, srv *gitserver.Server, home, id string) string {
	t.Helper()
	dir := memDir(home, id)
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			data, _ := os.ReadFile(p)
			lines = append(lines, p+"="+string(data))
		}
		return nil
	})
	sort.Strings(lines)
	lines = append(lines, "HEAD="+git(t, dir, "rev-parse", "HEAD"), "remote="+git(t, srv.RepoDir(id), "rev-parse", "main"))
	return strings.Join(lines, "\n")
}

// memoryCLI runs `memfsd memory` with input on stdin.
func memoryCLI(t *testing.T, home, id, input string) (int, string) {
	t.Helper()
	cmd := exec.Command(binPath, "memory", "--agent", id, "--home", home)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// Two agents in one daemon: on a1's socket a1's routes work and every a2
// route, the operator's, /metrics and an unmanaged id answer 403 and write
// nothing; SIGTERM removes the sockets.
func TestAgentSocket_ServesOnlyItsAgent(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "a1", "--agent", "a2")
	sock := agentSock(home, "a1")
	checkSocketFile(t, sock)
	checkSocketFile(t, agentSock(home, "a2"))
	c1 := sockClient(sock)

	// a1's own routes.
	var res struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	if code, err := p.callOn(c1, "POST", "/v1/agents/a1/memory", `{"command":"create","path":"/memories/notes/own.md","file_text":"mine\n"}`, &res); err != nil || code != 200 || res.IsError {
		t.Fatalf("a1 memory on a1's socket: %d %+v %v", code, res, err)
	}
	var tr turnResult
	if code, err := p.callOn(c1, "POST", "/v1/agents/a1/turn?wait=60s", "", &tr); err != nil || code != 200 || tr.Outcome != "pushed" {
		t.Fatalf("a1 turn on a1's socket: %d %+v %v", code, tr, err)
	}
	if got := git(t, srv.RepoDir("a1"), "show", "main:notes/own.md"); got != "mine" {
		t.Fatalf("a1's remote notes/own.md = %q", got)
	}
	var ctxOut struct {
		Text string `json:"text"`
	}
	if code, err := p.callOn(c1, "GET", "/v1/agents/a1/context", "", &ctxOut); err != nil || code != 200 || !strings.Contains(ctxOut.Text, "own.md") {
		t.Fatalf("a1 context on a1's socket: %d %v %q", code, err, ctxOut.Text)
	}
	for _, path := range []string{"/v1/agents/a1/reminders", "/v1/agents/a1/status", "/healthz"} {
		if code, err := p.callOn(c1, "GET", path, "", nil); err != nil || code != 200 {
			t.Fatalf("GET %s on a1's socket: %d %v", path, code, err)
		}
	}
	var list struct {
		Agents []status `json:"agents"`
	}
	if code, err := p.callOn(c1, "GET", "/v1/agents", "", &list); err != nil || code != 200 || len(list.Agents) != 1 || list.Agents[0].Agent != "a1" {
		t.Fatalf("GET /v1/agents on a1's socket: %d %v %+v, want a1 alone", code, err, list.Agents)
	}

	// Everything about a2 (and the operator's routes) is refused.
	before := snapshot(t, srv, home, "a2")
	for _, r := range []struct{ method, path, body, want string }{
		{"POST", "/v1/agents/a2/memory", `{"command":"create","path":"/memories/notes/pwned.md","file_text":"x\n"}`, "this socket is agent \"a1\"'s own"},
		{"POST", "/v1/agents/a2/memory", `{"command":"delete","path":"/memories/system"}`, "a1"},
		{"POST", "/v1/agents/a2/turn?wait=1s", "", "a1"},
		{"GET", "/v1/agents/a2/status", "", "a1"},
		{"GET", "/v1/agents/a2/context", "", "a1"},
		{"GET", "/v1/agents/a2/reminders", "", "a1"},
		{"GET", "/v1/agents/nobody/status", "", "a1"},
		{"PUT", "/v1/agents/a2/blocks/persona", "---\nread_only: true\n---\nowned\n", "admin.sock"},
		{"POST", "/v1/agents/a2/accept", `{"deletes": true}`, "admin.sock"},
		{"PUT", "/v1/agents/a3", "", "admin.sock"},
		{"PUT", "/v1/agents/a1/blocks/persona", "---\nread_only: true\n---\nowned\n", "admin.sock"},
		{"GET", "/metrics", "", "shared --listen socket"},
	} {
		var answer struct {
			Error string `json:"error"`
		}
		code, err := p.callOn(c1, r.method, r.path, r.body, &answer)
		if err != nil || code != 403 || !strings.Contains(answer.Error, r.want) {
			t.Errorf("%s %s on a1's socket: %d %q %v, want 403 with %q", r.method, r.path, code, answer.Error, err, r.want)
		}
	}
	if after := snapshot(t, srv, home, "a2"); after != before {
		t.Fatalf("a2 changed through a1's socket:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if st := p.status("a2"); len(st.Dirty) != 0 || st.State != "clean" {
		t.Fatalf("a2 after the refused calls: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(home, "agents", "a3")); err == nil {
		t.Fatal("a refused PUT /v1/agents/a3 made a folder")
	}
	// The shared socket still serves every agent (one-agent sidecars, the
	// operator's tools).
	if code, _ := p.get("/v1/agents/a2/status", nil); code != 200 {
		t.Fatalf("a2 on the shared socket: %d", code)
	}

	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	for _, id := range []string{"a1", "a2"} {
		if _, err := os.Lstat(agentSock(home, id)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s's socket after SIGTERM: %v, want removed", id, err)
		}
	}
}

// fakeShared puts a listener that counts connections (and answers 500) in
// place of the daemon's shared socket: a CLI that goes there is seen.
func fakeShared(t *testing.T, home string) *atomic.Int32 {
	t.Helper()
	path := filepath.Join(home, "memfsd.sock")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				n.Add(1)
			}
		},
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return &n
}

// After SIGKILL a restart replaces the stale sockets; an agent added by
// PUT /v1/agents/{id} gets its own; the CLI's per-agent commands use the
// agent's own socket (the shared one is replaced by an impostor that no
// command may reach).
func TestAgentSocket_RestartPutAndCLI(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "a1")
	checkSocketFile(t, agentSock(home, "a1"))
	p.cmd.Process.Kill()
	p.cmd.Wait()
	if _, err := os.Lstat(agentSock(home, "a1")); err != nil {
		t.Fatalf("no stale socket left by SIGKILL (the test proves nothing): %v", err)
	}
	p = startDaemon(t, srv, home, "--agent", "a1")
	checkSocketFile(t, agentSock(home, "a1"))
	if code, err := p.callOn(sockClient(agentSock(home, "a1")), "GET", "/v1/agents/a1/status", "", nil); err != nil || code != 200 {
		t.Fatalf("a1's socket after SIGKILL and restart: %d %v", code, err)
	}

	// An agent added on the admin socket gets its own socket at once.
	if code, err := p.adminCall("PUT", "/v1/agents/a3?wait=30s", "", nil); err != nil || code != 200 {
		t.Fatalf("PUT /v1/agents/a3: %d %v", code, err)
	}
	checkSocketFile(t, agentSock(home, "a3"))
	c3 := sockClient(agentSock(home, "a3"))
	var res struct {
		IsError bool `json:"is_error"`
	}
	if code, err := p.callOn(c3, "POST", "/v1/agents/a3/memory", `{"command":"create","path":"/memories/a3.md","file_text":"three\n"}`, &res); err != nil || code != 200 || res.IsError {
		t.Fatalf("a3 memory on a3's socket: %d %v %+v", code, err, res)
	}
	if code, _ := p.callOn(c3, "GET", "/v1/agents/a1/status", "", nil); code != 403 {
		t.Fatalf("a1 on a3's socket: %d, want 403", code)
	}

	// The CLI for one agent goes to the agent's own socket.
	hits := fakeShared(t, home)
	if code, out := memoryCLI(t, home, "a1", `{"command":"create","path":"/memories/cli.md","file_text":"via my socket\n"}`); code != 0 {
		t.Fatalf("memfsd memory --agent a1: %d %s", code, out)
	}
	if data, err := os.ReadFile(filepath.Join(memDir(home, "a1"), "cli.md")); err != nil || string(data) != "via my socket\n" {
		t.Fatalf("cli.md = %q %v", data, err)
	}
	for _, args := range [][]string{
		{"turn", "--agent", "a1", "--wait", "60s"},
		{"reminders", "--agent", "a1"},
		{"context", "--agent", "a1"},
		{"status", "--agent", "a1"},
	} {
		if code, out := runCLI(t, srv, home, args...); code != 0 {
			t.Fatalf("memfsd %s: %d %s", strings.Join(args, " "), code, out)
		}
	}
	if got := git(t, srv.RepoDir("a1"), "show", "main:cli.md"); got != "via my socket" {
		t.Fatalf("remote cli.md after memfsd turn = %q", got)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d connections to the shared socket: the per-agent commands did not use the agent's own", n)
	}
	// Without an own socket (an agent the daemon does not manage), the
	// shared one is asked as before.
	runCLI(t, srv, home, "status", "--agent", "unmanaged")
	if hits.Load() == 0 {
		t.Fatal("an agent without its own socket did not fall back to the shared one")
	}
}

// A 128-character id under a home makes a socket path past the 107 bytes a
// socket address holds: the socket is still made, served and used by the
// CLI, and removed at SIGTERM.
func TestAgentSocket_LongPath(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	id := strings.Repeat("L", 120) + "-8chars."
	p := startDaemon(t, srv, home, "--agent", id, "--agent", "short")
	sock := agentSock(home, id)
	if len(sock) <= unixsock.MaxPath {
		t.Fatalf("socket path %d bytes: not long enough to test", len(sock))
	}
	checkSocketFile(t, sock)
	c := sockClient(sock)
	if code, err := p.callOn(c, "GET", "/v1/agents/"+id+"/status", "", nil); err != nil || code != 200 {
		t.Fatalf("status on the long socket: %d %v", code, err)
	}
	if code, _ := p.callOn(c, "GET", "/v1/agents/short/status", "", nil); code != 403 {
		t.Fatalf("another agent on the long socket: %d, want 403", code)
	}
	hits := fakeShared(t, home)
	if code, out := memoryCLI(t, home, id, `{"command":"create","path":"/memories/long.md","file_text":"long\n"}`); code != 0 {
		t.Fatalf("memfsd memory --agent <long id>: %d %s", code, out)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d connections to the shared socket, want the agent's own", n)
	}
	if _, err := os.Stat(filepath.Join(memDir(home, id), "long.md")); err != nil {
		t.Fatal(err)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("long socket after SIGTERM: %v, want removed", err)
	}
}
