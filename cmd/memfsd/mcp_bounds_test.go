package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Issue 38, items 3 and 4: what one agent's MCP clients make the daemon
// hold is bounded per agent, a client that does not read is dropped (never
// waited on), and SIGTERM exits within --shutdown-timeout whatever a
// client does.

const rawProtocol = "2025-06-18"

// rawMCP speaks streamable HTTP by hand on an agent's socket: what a
// hostile client does, without the SDK's client.
type rawMCP struct {
	sock string
	hc   *http.Client
}

func newRawMCP(sock string) *rawMCP {
	return &rawMCP{sock: sock, hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}}
}

// post sends one JSON-RPC message (sid: the session's, "" for none) and
// reads the whole answer.
func (c *rawMCP) post(sid, body string) (int, http.Header, string, error) {
	req, _ := http.NewRequest("POST", "http://memfsd/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", rawProtocol)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data), err
}

// initialize starts a session: its id, or the refusal's status and body.
func (c *rawMCP) initialize() (sid string, code int, body string, err error) {
	code, hdr, body, err := c.post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+rawProtocol+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil || code != 200 {
		return "", code, body, err
	}
	sid = hdr.Get("Mcp-Session-Id")
	if c, _, b, err := c.post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || c != http.StatusAccepted {
		return "", c, b, fmt.Errorf("notifications/initialized: %d %v %s", c, err, b)
	}
	return sid, code, body, nil
}

func (c *rawMCP) subscribe(t *testing.T, sid, uri string) {
	t.Helper()
	code, _, body, err := c.post(sid, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`)
	if err != nil || code != 200 || strings.Contains(body, `"error"`) {
		t.Fatalf("subscribe %s: %d %v %s", uri, code, err, body)
	}
}

// openStreamNeverRead opens the session's GET stream on a connection with a
// small receive buffer, reads the answer's headers and never reads again.
func (c *rawMCP) openStreamNeverRead(t *testing.T, sid string) net.Conn {
	t.Helper()
	conn, err := net.Dial("unix", c.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if raw, err := conn.(*net.UnixConn).SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: memfsd\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n\r\n", sid, rawProtocol)
	br := bufio.NewReaderSize(conn, 16)
	var head strings.Builder
	for !strings.HasSuffix(head.String(), "\r\n\r\n") {
		b, err := br.ReadByte()
		if err != nil {
			t.Fatalf("GET /mcp headers: %v (%q)", err, head.String())
		}
		head.WriteByte(b)
	}
	if !strings.HasPrefix(head.String(), "HTTP/1.1 200") {
		t.Fatalf("GET /mcp: %q", head.String())
	}
	return conn
}

// nonReaderName is the i-th file a non-reading client subscribes to: long
// names, so each notification is a few hundred bytes.
func nonReaderName(i int) string {
	return fmt.Sprintf("nr/%s-%03d.md", strings.Repeat("n", 180), i)
}

const nonReaderFiles = 200

// setUpNonReader starts a session on agent id's socket subscribed to
// nonReaderFiles long-named files and to the context, with its stream open
// and never read.
func setUpNonReader(t *testing.T, home, id string) (*rawMCP, string) {
	t.Helper()
	c := newRawMCP(agentSock(home, id))
	sid, code, body, err := c.initialize()
	if err != nil || sid == "" {
		t.Fatalf("initialize: %d %v %s", code, err, body)
	}
	for i := range nonReaderFiles {
		c.subscribe(t, sid, "memory:///"+nonReaderName(i))
	}
	c.subscribe(t, sid, "memfsd://context")
	c.openStreamNeverRead(t, sid)
	return c, sid
}

// writeRound writes every file the non-reader subscribed to into id's
// folder (round r's text): one commit, nonReaderFiles+3 notifications for
// the non-reader.
func writeRound(t *testing.T, home, id string, r int) {
	t.Helper()
	dir := filepath.Join(memDir(home, id), "nr")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range nonReaderFiles {
		if err := os.WriteFile(filepath.Join(memDir(home, id), nonReaderName(i)), []byte(fmt.Sprintf("round %d\n", r)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// count is how many times u was told of uri.
func (u *updates) count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, x := range u.uris {
		if x == uri {
			n++
		}
	}
	return n
}

// metric reads one gauge from the shared socket's /metrics.
func metric(t *testing.T, p *proc, name string) float64 {
	t.Helper()
	resp, err := p.api.Get("http://memfsd/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// TestMCP_SessionsBoundedPerAgent: one agent opens 1,000 MCP sessions on
// its socket (16 at a time). Only --mcp-max-sessions (32) are opened; the
// others are answered 429 with a JSON-RPC error naming the bound and what
// to do; the daemon's goroutines and heap stay bounded; another agent's
// session works meanwhile; ending a session makes room for one. Before
// issue 38 all 1,000 were opened (+87 MiB heap, 3,000 goroutines, each
// kept 30 minutes).
func TestMCP_SessionsBoundedPerAgent(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := filepath.Join(t.TempDir(), "home")
	p := startDaemon(t, srv, home, "--agent", "many", "--agent", "calm")
	c := newRawMCP(agentSock(home, "many"))
	// The first session makes the host list the files once.
	first, code, body, err := c.initialize()
	if err != nil || first == "" {
		t.Fatalf("initialize: %d %v %s", code, err, body)
	}
	goroutines, heap := metric(t, p, "go_goroutines"), metric(t, p, "go_memstats_heap_inuse_bytes")
	var opened, refused atomic.Int32
	var mu sync.Mutex
	var other []string
	var refusal string
	var wg sync.WaitGroup
	next := make(chan int)
	start := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				sid, code, body, err := c.initialize()
				switch {
				case err == nil && sid != "":
					opened.Add(1)
				case code == http.StatusTooManyRequests:
					refused.Add(1)
					mu.Lock()
					refusal = body
					mu.Unlock()
				default:
					mu.Lock()
					other = append(other, fmt.Sprintf("%d %v %.200s", code, err, body))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range 999 {
		next <- i
	}
	close(next)
	wg.Wait()
	took := time.Since(start)
	dg, dh := metric(t, p, "go_goroutines")-goroutines, metric(t, p, "go_memstats_heap_inuse_bytes")-heap
	t.Logf("999 more sessions asked in %s: %d opened, %d refused; daemon +%.0f goroutines, heap in use %+.1f MiB", took.Round(time.Millisecond), opened.Load(), refused.Load(), dg, dh/(1<<20))
	if len(other) > 0 {
		t.Fatalf("%d answers neither a session nor 429, e.g. %s", len(other), other[0])
	}
	if got := opened.Load() + 1; got != 32 {
		t.Fatalf("%d sessions open for one agent, want the bound, 32 (--mcp-max-sessions)", got)
	}
	for _, want := range []string{`"jsonrpc":"2.0"`, `"error"`, "32 MCP sessions open", "--mcp-max-sessions", "DELETE /mcp"} {
		if !strings.Contains(refusal, want) {
			t.Fatalf("the refusal does not say %q: %s", want, refusal)
		}
	}
	if dg > 32*8+100 {
		t.Errorf("the daemon holds %.0f more goroutines for 32 sessions", dg)
	}
	if dh > 48<<20 {
		t.Errorf("the daemon's heap in use grew by %.1f MiB for 32 sessions", dh/(1<<20))
	}
	// Another agent is not affected: its session opens and answers.
	cs, err := mcpSocket(t, agentSock(home, "calm"))
	if err != nil {
		t.Fatalf("the other agent's session: %v", err)
	}
	defer cs.Close()
	if text, isErr := mcpCall(t, cs, "memory", map[string]any{"command": "create", "path": "/memories/calm.md", "file_text": "unaffected\n"}); isErr {
		t.Fatalf("the other agent's tool call: %s", text)
	}
	// Ending a session makes room for one.
	req, _ := http.NewRequest("DELETE", "http://memfsd/mcp", nil)
	req.Header.Set("Mcp-Session-Id", first)
	req.Header.Set("Mcp-Protocol-Version", rawProtocol)
	resp, err := c.hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE a session: %v %v", err, resp)
	}
	resp.Body.Close()
	waitFor(t, 10*time.Second, "a new session once one ended", func() bool {
		sid, _, _, err := c.initialize()
		return err == nil && sid != ""
	})
}

// TestMCP_NonReaderDropped: a client of agent nr subscribes to 200 files
// and the context, opens its GET /mcp stream and never reads it (4 KiB
// receive buffer). Another session of the same agent is still told of
// every change within a bound, round after round of 200 changed files,
// and the non-reader's session is dropped (its id answers 404) after
// --mcp-write-timeout. Before issue 38 the notification write to the
// non-reader blocked the agent's watch loop for good: the other session
// was never told again (from the third round here).
func TestMCP_NonReaderDropped(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := filepath.Join(t.TempDir(), "home")
	p := startDaemon(t, srv, home, "--agent", "nr", "--mcp-write-timeout", "2s")
	c, sid := setUpNonReader(t, home, "nr")
	good, u := connectNotify(t, &mcp.StreamableClientTransport{Endpoint: "http://memfsd/mcp", HTTPClient: newRawMCP(agentSock(home, "nr")).hc}, nil, rawProtocol)
	if err := good.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "memfsd://context"}); err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	for r := range 12 {
		before := u.count("memfsd://context")
		start := time.Now()
		writeRound(t, home, "nr", r)
		waitFor(t, 20*time.Second, fmt.Sprintf("round %d: the other session told of the change", r), func() bool { return u.count("memfsd://context") > before })
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("12 rounds of 200 changed files: the reading session told within %s at worst", slowest.Round(time.Millisecond))
	waitFor(t, 20*time.Second, "the non-reader's session dropped", func() bool {
		code, _, _, err := c.post(sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		return err == nil && code == http.StatusNotFound
	})
	if !strings.Contains(p.logs.String(), "MCP client not reading: its session is dropped") {
		t.Fatalf("the log does not say the non-reader was dropped")
	}
}

// TestRun_ShutdownBoundedWithNonReader: SIGTERM with an MCP client that
// never reads its stream (its buffers full) connected: the daemon exits
// within --shutdown-timeout and both agents' final pushes (a direct write
// committed, not pushed) land on the remote; a second SIGTERM, later than
// 2 s after the first, exits at once while a push hangs. Before issue 38
// the daemon closed the MCP hosts first, without a bound, and never
// exited: no final push, and --shutdown-timeout meant nothing.
func TestRun_ShutdownBoundedWithNonReader(t *testing.T) {
	t.Parallel()
	// setup starts a daemon with agents id and id+"-b", a non-reader on id
	// whose buffers are full, and a last write committed on each, not
	// pushed.
	setup := func(t *testing.T, id, timeout string) (*gitserver.Server, string, *proc) {
		srv := gitserver.New(t, token)
		home := filepath.Join(t.TempDir(), "home")
		// --mcp-write-timeout 1h: the write to the non-reader is still
		// blocked at SIGTERM (the shutdown must cut it, not wait it out).
		p := startDaemon(t, srv, home, "--agent", id, "--agent", id+"-b", "--shutdown-timeout", timeout, "--mcp-write-timeout", "1h")
		setUpNonReader(t, home, id)
		// Fill the non-reader's buffers: enough rounds that, before issue
		// 38, the watch loop is blocked on it.
		for r := range 6 {
			writeRound(t, home, id, r)
			n := r
			waitFor(t, 20*time.Second, "the round committed", func() bool {
				got, err := gitTry(memDir(home, id), "show", "HEAD:"+nonReaderName(nonReaderFiles-1))
				return err == nil && strings.TrimSpace(got) == fmt.Sprintf("round %d", n)
			})
		}
		// The rounds pushed: the final push carries the last write only.
		if tr := p.turn(id); tr.Outcome != "pushed" {
			t.Fatalf("turn: %+v", tr)
		}
		for _, a := range []string{id, id + "-b"} {
			os.WriteFile(filepath.Join(memDir(home, a), "last-words.md"), []byte("pushed at shutdown\n"), 0o644)
			waitFor(t, 20*time.Second, a+": the last write committed", func() bool {
				out, _ := gitTry(memDir(home, a), "log", "-1", "--format=%s")
				return strings.Contains(out, "last-words.md")
			})
		}
		if strings.Contains(p.logs.String(), "MCP client not reading") {
			t.Fatal("the non-reader was dropped before SIGTERM")
		}
		return srv, home, p
	}
	exitWithin := func(t *testing.T, p *proc, bound time.Duration, what string) time.Duration {
		start := time.Now()
		exited := make(chan error, 1)
		go func() { exited <- p.cmd.Wait() }()
		select {
		case <-exited:
			return time.Since(start)
		case <-time.After(bound):
			t.Fatalf("%s: the daemon still runs %s after it", what, bound)
		}
		return 0
	}
	t.Run("WithinTimeoutFinalPushes", func(t *testing.T) {
		t.Parallel()
		srv, _, p := setup(t, "sd", "6s")
		p.cmd.Process.Signal(syscall.SIGTERM)
		took := exitWithin(t, p, 6*time.Second+time.Second, "SIGTERM with --shutdown-timeout 6s")
		t.Logf("SIGTERM to exit: %s (--shutdown-timeout 6s)", took.Round(time.Millisecond))
		for _, a := range []string{"sd", "sd-b"} {
			if got, err := gitTry(srv.RepoDir(a), "show", "main:last-words.md"); err != nil || strings.TrimSpace(got) != "pushed at shutdown" {
				t.Fatalf("%s: the final push did not reach the remote: %q %v", a, got, err)
			}
		}
	})
	t.Run("SecondSignalExitsAtOnce", func(t *testing.T) {
		t.Parallel()
		srv, _, p := setup(t, "ss", "60s")
		f := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/ss-b/state.git/git-receive-pack", Count: -1, Hang: true})
		defer f.Release()
		first := time.Now()
		p.cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(time.Until(first.Add(2500 * time.Millisecond)))
		p.cmd.Process.Signal(syscall.SIGTERM)
		took := exitWithin(t, p, 3*time.Second, "a second SIGTERM 2.5 s after the first")
		t.Logf("second SIGTERM to exit: %s", took.Round(time.Millisecond))
		if !strings.Contains(p.logs.String(), "second signal: aborting the final push and exiting now") {
			t.Fatalf("the log does not say the second signal ended it")
		}
	})
}
