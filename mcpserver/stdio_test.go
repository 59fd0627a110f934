package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/mcpserver"
)

// TestStdio_GarbageAnsweredSessionGoesOn: lines that are not JSON-RPC
// messages (garbage, wrong types, one over MaxMessage) each get an error
// answer, nothing is written, and the session keeps serving.
func TestStdio_GarbageAnsweredSessionGoesOn(t *testing.T) {
	t.Parallel()
	r := newRig(t, mcpserver.Options{PushIdle: time.Hour}, 0)
	before := r.log(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.host.Run(ctx, mcpserver.StdioTransport(inR, outW)) }()
	t.Cleanup(func() { inW.Close(); cancel(); outR.Close(); <-done })
	go func() {
		for _, l := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`garbage{`,
			`{"jsonrpc":"2.0","id":7,"method":5}`,
			`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"memory","arguments":{"command":"create","path":"/memories/x.md","file_text":"` + strings.Repeat("x", mcpserver.MaxMessage) + `"}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory","arguments":{"command":"view","path":"/memories"}}}`,
		} {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				return
			}
		}
	}()
	seen := map[string]string{}
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %q", sc.Text())
		}
		msg := ""
		if m.Error != nil {
			msg = m.Error.Message
		}
		if string(m.ID) == "null" {
			seen["null:"+msg] = msg
		}
		seen[string(m.ID)] = msg
		if string(m.ID) == "3" {
			break
		}
	}
	if msg, ok := seen["7"]; !ok || !strings.Contains(msg, "invalid request") {
		t.Errorf("id 7 (method of a wrong type): %q", msg)
	}
	var parse, tooLong bool
	for k := range seen {
		parse = parse || strings.Contains(k, "parse error")
		tooLong = tooLong || strings.Contains(k, "over")
	}
	if !parse || !tooLong {
		t.Errorf("garbage answered: %v, oversized answered: %v (%v)", parse, tooLong, seen)
	}
	if msg, ok := seen["3"]; !ok || msg != "" {
		t.Errorf("the call after the bad lines: answered %v, error %q", ok, msg)
	}
	if after := r.log(t); after != before {
		t.Fatalf("bad input made commits:\n%s", after)
	}
}
