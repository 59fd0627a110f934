package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Scenarios of issue 27's API walls: idempotency only memfsd can record,
// credentials on a network listener, in-tree symbolic links.

// keyedCall posts a memory call with an Idempotency-Key and returns the
// HTTP code and the tool's answer.
func (p *proc) keyedCall(id, key, input string) (int, string, bool) {
	p.t.Helper()
	req, _ := http.NewRequest("POST", "http://memfsd/v1/agents/"+id+"/memory", strings.NewReader(input))
	req.Header.Set("Idempotency-Key", key)
	resp, err := p.api.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		p.t.Fatalf("memory call: %d %v", resp.StatusCode, err)
	}
	return resp.StatusCode, res.Content, res.IsError
}

// A `Memory-Call: K` the agent wrote — in a reason, or in a commit of its
// shell — does not make a later call with K "already applied"; a key sent
// again with another call is refused naming the key, and writes nothing.
func TestWalls_IdempotencyOnlyWhatMemfsdRecorded(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "idf")
	dir := memDir(home, "idf")
	if out, isErr := p.memory("idf", `{"command":"create","path":"/memories/bait.md","file_text":"x\n","reason":"bait\n\nMemory-Call: toolu_R\nMemory-Call-Check: 00 11"}`); isErr {
		t.Fatal(out)
	}
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "shell\n\nMemory-Call: toolu_S")
	for _, key := range []string{"toolu_R", "toolu_S"} {
		code, out, isErr := p.keyedCall("idf", key, `{"command":"create","path":"/memories/`+key+`.md","file_text":"real\n"}`)
		if code != 200 || isErr || strings.HasPrefix(out, "already applied") {
			t.Fatalf("key %s after a forged trailer: %d %q", key, code, out)
		}
		if data, err := os.ReadFile(filepath.Join(dir, key+".md")); err != nil || string(data) != "real\n" {
			t.Fatalf("key %s: %q %v, want the call applied", key, data, err)
		}
	}
	head := git(t, dir, "rev-parse", "HEAD")
	code, out, isErr := p.keyedCall("idf", "toolu_R", `{"command":"create","path":"/memories/other.md","file_text":"other\n"}`)
	if code != 409 || !isErr || !strings.Contains(out, "toolu_R") {
		t.Fatalf("a reused key with another call: %d %q (error %v), want 409 naming the key", code, out, isErr)
	}
	if _, err := os.Stat(filepath.Join(dir, "other.md")); err == nil || git(t, dir, "rev-parse", "HEAD") != head {
		t.Fatal("the call with a reused key was written")
	}
	code, out, _ = p.keyedCall("idf", "toolu_R", `{"command":"create","path":"/memories/toolu_R.md","file_text":"real\n"}`)
	if code != 200 || !strings.HasPrefix(out, "File created successfully") {
		t.Fatalf("the same call again: %d %q, want the first answer", code, out)
	}
}

// freeTCPPort is a port nothing listens on now (0.0.0.0, every interface).
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A TCP address other than loopback is refused at start without a
// credential; with --listen-token-file, a request without the token gets
// 401 and one with it 200. The test reaches the 0.0.0.0 binding through
// 127.0.0.1: its traffic stays on loopback.
func TestWalls_NetworkListenNeedsCredential(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	for flag, tokenFlag := range map[string]string{"--listen": "--listen-token-file", "--admin-listen": "--admin-listen-token-file"} {
		home := t.TempDir()
		addr := fmt.Sprintf("0.0.0.0:%d", freeTCPPort(t))
		cmd := exec.Command(binPath, "run", "--home", home, "--base-url", srv.URL, "--agent", "net", flag, addr)
		cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var exit error
		exited := false
		waitFor(t, 10*time.Second, "the daemon to exit or start", func() bool {
			select {
			case exit = <-done:
				exited = true
				return true
			default:
				return strings.Contains(out.String(), "memfsd running")
			}
		})
		if !exited {
			cmd.Process.Kill()
			<-done
			t.Fatalf("%s %s without a credential: the daemon started:\n%s", flag, addr, out.String())
		}
		if exit == nil || !strings.Contains(out.String(), " "+tokenFlag) || !strings.Contains(out.String(), addr) {
			t.Fatalf("%s %s without a credential: exit %v, output:\n%s", flag, addr, exit, out.String())
		}
	}

	home := t.TempDir()
	port := freeTCPPort(t)
	tokFile := filepath.Join(t.TempDir(), "listen-token")
	if err := os.WriteFile(tokFile, []byte("api-token-5a4b3c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	launchDaemon(t, srv, home, "--agent", "net", "--listen", fmt.Sprintf("0.0.0.0:%d", port), "--listen-token-file", tokFile)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path, auth string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	waitFor(t, 30*time.Second, "the daemon healthy on "+base, func() bool {
		code, _ := get("/healthz", "Bearer api-token-5a4b3c")
		return code == 200
	})
	for _, auth := range []string{"", "Bearer wrong-token", "api-token-5a4b3c"} {
		code, body := get("/v1/agents/net/context", auth)
		var e struct {
			Error string `json:"error"`
		}
		if code != 401 || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
			t.Fatalf("Authorization %q: %d %s, want 401 with a JSON error", auth, code, body)
		}
	}
	if code, body := get("/v1/agents/net/status", "Bearer api-token-5a4b3c"); code != 200 || !strings.Contains(body, `"agent": "net"`) {
		t.Fatalf("with the token: %d %s", code, body)
	}
	// The CLI sends the token from the same flag.
	tcp := fmt.Sprintf("127.0.0.1:%d", port)
	if code, out := runCLI(t, srv, home, "health", "--listen", tcp, "--listen-token-file", tokFile); code != 0 {
		t.Fatalf("memfsd health with --listen-token-file: exit %d\n%s", code, out)
	}
	if code, out := runCLI(t, srv, home, "health", "--listen", tcp); code != 1 || !strings.Contains(out, "401") {
		t.Fatalf("memfsd health without the token: exit %d\n%s", code, out)
	}
	// Without it a client command says so; it never reads the folders
	// behind the daemon's back instead.
	if code, out := runCLI(t, srv, home, "status", "--listen", tcp); code != 1 || !strings.Contains(out, "--listen-token-file") {
		t.Fatalf("memfsd status without the token: exit %d\n%s", code, out)
	}
}

// Through the daemon: a link the agent's shell made to a folder inside the
// memory is followed by the memory tool (the write lands where it leads
// and is committed there); a link out of the memory is refused and nothing
// lands outside.
func TestWalls_InTreeSymlinkFollowed(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lnk")
	dir := memDir(home, "lnk")
	if out, isErr := p.memory("lnk", `{"command":"create","path":"/memories/notes/a.md","file_text":"alpha\n"}`); isErr {
		t.Fatal(out)
	}
	outside := t.TempDir()
	if err := os.Symlink("notes", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	out, isErr := p.memory("lnk", `{"command":"create","path":"/memories/link/file.txt","file_text":"via link\n"}`)
	if isErr || out != "File created successfully at: /memories/link/file.txt" {
		t.Fatalf("create through an in-tree link: %q (error %v)", out, isErr)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "notes", "file.txt")); err != nil || string(data) != "via link\n" {
		t.Fatalf("notes/file.txt = %q %v", data, err)
	}
	// The watcher may commit the links themselves after the tool's commit:
	// look for the commit of the file, not at the last one.
	if got := git(t, dir, "log", "--format=%s", "--", "notes/file.txt"); !strings.Contains(got, "notes/file.txt") {
		t.Fatalf("no commit names notes/file.txt:\n%s", got)
	}
	if out, isErr := p.memory("lnk", `{"command":"view","path":"/memories/link/a.md"}`); isErr || !strings.Contains(out, "alpha") {
		t.Fatalf("view through an in-tree link: %q (error %v)", out, isErr)
	}
	out, isErr = p.memory("lnk", `{"command":"create","path":"/memories/out/x.md","file_text":"x\n"}`)
	if !isErr || out != "Path would escape /memories directory via symlink" {
		t.Fatalf("create through a link out of the memory: %q (error %v)", out, isErr)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("a write escaped the memory: %v", entries)
	}
}

// startRefused runs `memfsd run` with args and waits for it to exit before
// it serves; it returns the output (the daemon starting fails the test).
func startRefused(t *testing.T, srv *gitserver.Server, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"run", "--home", t.TempDir(), "--base-url", srv.URL, "--agent", "net"}, args...)...)
	cmd.Env = append(append(os.Environ(), "MEMFSD_TOKEN="+token), env...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var exit error
	exited := false
	waitFor(t, 10*time.Second, "the daemon to exit or start", func() bool {
		select {
		case exit = <-done:
			exited = true
			return true
		default:
			return strings.Contains(out.String(), "memfsd running")
		}
	})
	if !exited {
		cmd.Process.Kill()
		<-done
		t.Fatalf("memfsd run %v: the daemon started:\n%s", args, out.String())
	}
	if exit == nil {
		t.Fatalf("memfsd run %v: exit 0:\n%s", args, out.String())
	}
	return out.String()
}

// The operator's TCP --admin-listen has its own token: the agents' token
// (--listen-token-file) does not open it, nor it the agents' listener; a
// TCP admin listener without its token is refused at start (also on
// loopback when --listen-token-file is given: before, that token guarded
// both). Both listeners bind 0.0.0.0, reached through 127.0.0.1.
func TestWalls_AdminListenHasItsOwnToken(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	dir := t.TempDir()
	agentTok, adminTok := filepath.Join(dir, "agent-token"), filepath.Join(dir, "admin-token")
	for f, tok := range map[string]string{agentTok: "agent-token-1f2e3d\n", adminTok: "admin-token-9c8b7a\n"} {
		if err := os.WriteFile(f, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"--admin-listen", fmt.Sprintf("0.0.0.0:%d", freeTCPPort(t)), "--listen-token-file", agentTok},
		{"--admin-listen", fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t)), "--listen-token-file", agentTok},
	} {
		if out := startRefused(t, srv, nil, args...); !strings.Contains(out, "--admin-listen-token-file") || !strings.Contains(out, args[1]) {
			t.Fatalf("memfsd run %v: want a refusal naming --admin-listen-token-file:\n%s", args, out)
		}
	}
	// The environment variable names the admin token's file too.
	if out := startRefused(t, srv, []string{"MEMFSD_ADMIN_LISTEN_TOKEN_FILE=" + agentTok}, "--admin-listen", fmt.Sprintf("0.0.0.0:%d", freeTCPPort(t)), "--listen-token-file", agentTok); !strings.Contains(out, "same token") {
		t.Fatalf("one token for both: want a refusal:\n%s", out)
	}

	home := t.TempDir()
	port, adminPort := freeTCPPort(t), freeTCPPort(t)
	launchDaemon(t, srv, home, "--agent", "net",
		"--listen", fmt.Sprintf("0.0.0.0:%d", port), "--listen-token-file", agentTok,
		"--admin-listen", fmt.Sprintf("0.0.0.0:%d", adminPort), "--admin-listen-token-file", adminTok)
	call := func(method string, port int, path, tok, body string) int {
		req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	waitFor(t, 30*time.Second, "the daemon healthy on both listeners", func() bool {
		return call("GET", port, "/healthz", "agent-token-1f2e3d", "") == 200 && call("GET", adminPort, "/healthz", "admin-token-9c8b7a", "") == 200
	})
	budget := `{"tokens": 5000}`
	if code := call("PUT", adminPort, "/v1/agents/net/budget", "agent-token-1f2e3d", budget); code != 401 {
		t.Fatalf("admin route with the agents' token: %d, want 401", code)
	}
	if code := call("GET", port, "/v1/agents/net/status", "admin-token-9c8b7a", ""); code != 401 {
		t.Fatalf("agents' route with the operator's token: %d, want 401", code)
	}
	if code := call("PUT", adminPort, "/v1/agents/net/budget", "admin-token-9c8b7a", budget); code != 200 {
		t.Fatalf("admin route with the operator's token: %d, want 200", code)
	}
	if code := call("GET", port, "/v1/agents/net/status", "agent-token-1f2e3d", ""); code != 200 {
		t.Fatalf("agents' route with the agents' token: %d, want 200", code)
	}
	// The CLI sends each listener its own token.
	admin := fmt.Sprintf("127.0.0.1:%d", adminPort)
	if code, out := runCLI(t, srv, home, "budget", "set", "--agent", "net", "--tokens", "6000", "--admin-listen", admin, "--listen-token-file", agentTok, "--admin-listen-token-file", adminTok); code != 0 {
		t.Fatalf("memfsd budget set with --admin-listen-token-file: exit %d\n%s", code, out)
	}
	if code, out := runCLI(t, srv, home, "budget", "set", "--agent", "net", "--tokens", "6000", "--admin-listen", admin, "--listen-token-file", agentTok); code != 1 || !strings.Contains(out, "--admin-listen-token-file") {
		t.Fatalf("memfsd budget set with only the agents' token: exit %d\n%s", code, out)
	}
}
