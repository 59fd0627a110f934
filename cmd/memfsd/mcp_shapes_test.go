package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// rawSession is `memfsd mcp` spoken to line by line, as any client may:
// each request written as given, its answer read back.
type rawSession struct {
	t     *testing.T
	in    io.WriteCloser
	out   *bufio.Reader
	lines chan []byte
	logs  *syncBuffer
	// onNotification, when set, is told each notification's method read
	// while waiting for an answer (or by drain).
	onNotification func(method string)
}

func startRawMCP(t *testing.T, srv *gitserver.Server, home string, args ...string) *rawSession {
	t.Helper()
	full := []string{"mcp", "--base-url", srv.URL}
	if home != "" {
		full = append(full, "--home", home)
	}
	cmd := execMemfsd(append(full, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &rawSession{t: t, in: in, out: bufio.NewReaderSize(out, 1<<20), lines: make(chan []byte, 64), logs: &syncBuffer{}}
	cmd.Stderr = s.logs
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		for {
			line, err := s.out.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				s.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
		if t.Failed() {
			t.Logf("memfsd mcp %v log:\n%s", args, s.logs.String())
		}
	})
	return s
}

// ask writes line (a request whose id is id) and returns the answer with
// that id, notifications skipped; "" when the session ended first.
func (s *rawSession) ask(id, line string) string {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write %s: %v\n%s", line, err, s.logs.String())
	}
	if id == "" {
		return ""
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got, ok := <-s.lines:
			if !ok {
				return ""
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(got, &m) == nil && string(m.ID) == id {
				return canonical(got)
			}
			if len(m.ID) == 0 && m.Method != "" && s.onNotification != nil {
				s.onNotification(m.Method)
			}
		case <-timeout:
			s.t.Fatalf("no answer to %s in 30 s", line)
		}
	}
}

// drain reads on until the session ends, telling onNotification.
func (s *rawSession) drain() {
	for got := range s.lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(got, &m) == nil && len(m.ID) == 0 && m.Method != "" && s.onNotification != nil {
			s.onNotification(m.Method)
		}
	}
}

// canonical is a JSON message with its objects' keys in order: two
// encoders may order them differently, JSON does not.
func canonical(msg []byte) string {
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		return strings.TrimSpace(string(msg))
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// rawShapes are requests of every shape the protocol allows a client to
// send (params absent, null, {}, unknown fields, _meta), for each method
// memfsd serves, plus a few it does not.
func rawShapes() []string {
	var reqs []string
	for _, m := range []string{"tools/list", "resources/list", "resources/templates/list", "prompts/list", "ping"} {
		reqs = append(reqs,
			`"method":"`+m+`"`,
			`"method":"`+m+`","params":null`,
			`"method":"`+m+`","params":{}`,
			`"method":"`+m+`","params":{"x-unknown":1,"cursor":null}`,
			`"method":"`+m+`","params":{"_meta":{"progressToken":7,"x":"y"}}`,
		)
	}
	reqs = append(reqs,
		`"method":"resources/list","params":{"cursor":"not-a-cursor"}`,
		`"method":"tools/call"`,
		`"method":"tools/call","params":null`,
		`"method":"tools/call","params":{}`,
		`"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}`,
		`"method":"tools/call","params":{"name":"memory","arguments":{"command":"view","path":"/memories/system/persona.md"},"x-unknown":true}`,
		`"method":"tools/call","params":{"name":"memory","arguments":{"command":"view","path":"/memories/system"}}`,
		`"method":"tools/call","params":{"name":"memory"}`,
		`"method":"tools/call","params":{"name":"memory","arguments":null}`,
		`"method":"tools/call","params":{"name":"memory","arguments":{"command":"view","path":5}}`,
		`"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"persona"},"_meta":{"progressToken":"p1"}}`,
		`"method":"resources/read"`,
		`"method":"resources/read","params":null`,
		`"method":"resources/read","params":{}`,
		`"method":"resources/read","params":{"uri":"memory:///system/persona.md","x-unknown":1}`,
		`"method":"resources/read","params":{"uri":"memory:///no/such.md"}`,
		`"method":"resources/read","params":{"uri":"memfsd://context"}`,
		`"method":"prompts/get"`,
		`"method":"prompts/get","params":null`,
		`"method":"prompts/get","params":{}`,
		`"method":"prompts/get","params":{"name":"memory_context"}`,
		`"method":"prompts/get","params":{"name":"memory_context","arguments":{"x":"y"},"x-unknown":1}`,
		`"method":"prompts/get","params":{"name":"no_such_prompt"}`,
		`"method":"resources/subscribe"`,
		`"method":"resources/subscribe","params":null`,
		`"method":"resources/subscribe","params":{}`,
		`"method":"resources/subscribe","params":{"uri":"memory:///system/persona.md","x-unknown":1}`,
		`"method":"resources/unsubscribe","params":{"uri":"memory:///system/persona.md"}`,
		`"method":"resources/unsubscribe"`,
		`"method":"resources/unsubscribe","params":{}`,
		`"method":"completion/complete"`,
		`"method":"completion/complete","params":{}`,
		`"method":"logging/setLevel","params":{"level":"info"}`,
		`"method":"logging/setLevel"`,
		`"method":"no/such/method"`,
		`"method":"no/such/method","params":{}`,
	)
	return reqs
}

// transcript runs the shapes on a session of protocol version: the
// initialize answer, then one answer per shape.
func transcript(t *testing.T, s *rawSession, version string) []string {
	t.Helper()
	var out []string
	init := s.ask("0", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	out = append(out, "initialize → "+init)
	s.ask("", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, shape := range rawShapes() {
		id := fmt.Sprint(i + 1)
		got := s.ask(id, `{"jsonrpc":"2.0","id":`+id+`,`+shape+`}`)
		if got == "" {
			return append(out, shape+" → (no answer: the session ended)")
		}
		out = append(out, shape+" → "+got)
	}
	return out
}

// TestMCP_RawShapesThroughDaemon: `memfsd mcp` through a running daemon
// answers every request shape exactly as it does in-process, for clients
// of each protocol version. The TypeScript SDK (the MCP Inspector, Claude
// Code) sends tools/list, resources/list and prompts/list with no params:
// through the daemon the proxy read them through a nil pointer and the
// session died (issue 39). Not covered: a client that sends initialize
// asking for 2026-07-28 gets "resultType": "complete" on tools/call
// in-process and not through the daemon (the Go SDK adds it in its own
// tools/call handler, which the proxy's forwarding bypasses); clients of
// that version send stateless requests instead of initialize.
func TestMCP_RawShapesThroughDaemon(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	daemonHome := filepath.Join(t.TempDir(), "daemon")
	startDaemon(t, srv, daemonHome, "--agent", "s")
	// The in-process agent clones what the daemon's pushed: the same
	// files, the same commits, so the same answers.
	soloHome := filepath.Join(t.TempDir(), "solo")
	for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			solo := transcript(t, startRawMCP(t, srv, soloHome, "--agent", "s", "--in-process"), version)
			proxied := transcript(t, startRawMCP(t, srv, daemonHome, "--agent", "s"), version)
			for i := range min(len(solo), len(proxied)) {
				if solo[i] != proxied[i] {
					t.Errorf("through the daemon:\n  %s\nin-process:\n  %s", proxied[i], solo[i])
				}
			}
			if len(solo) != len(proxied) {
				t.Errorf("%d answers in-process, %d through the daemon", len(solo), len(proxied))
			}
		})
	}
}

// TestMCP_ListChangedThroughDaemon: a client is told
// notifications/resources/list_changed when a write adds a file, through
// a daemon as in-process (the initialize answer promises it:
// resources.listChanged): a client that keeps resources/list's answer
// learns when to ask again.
func TestMCP_ListChangedThroughDaemon(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	daemonHome := filepath.Join(t.TempDir(), "daemon")
	startDaemon(t, srv, daemonHome, "--agent", "s")
	for i, name := range []string{"in-process", "through the daemon"} {
		args := []string{"--home", daemonHome}
		if i == 0 {
			args = []string{"--home", filepath.Join(t.TempDir(), "solo"), "--in-process"}
		}
		file := fmt.Sprintf("new%d.md", i)
		t.Run(name, func(t *testing.T) {
			s := startRawMCP(t, srv, "", append([]string{"--agent", "s"}, args...)...)
			s.ask("0", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			s.ask("", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			s.ask("1", `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)
			seen := make(chan struct{}, 1)
			s.onNotification = func(method string) {
				if method == "notifications/resources/list_changed" {
					select {
					case seen <- struct{}{}:
					default:
					}
				}
			}
			got := s.ask("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory","arguments":{"command":"create","path":"/memories/`+file+`","file_text":"new\n"}}}`)
			if strings.Contains(got, `"isError":true`) {
				t.Fatal(got)
			}
			go s.drain()
			select {
			case <-seen:
			case <-time.After(10 * time.Second):
				t.Fatalf("no notifications/resources/list_changed after a create added memory:///%s", file)
			}
		})
	}
}
