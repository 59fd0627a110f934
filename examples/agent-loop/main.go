// Command agent-loop plays an agent against a running `memfsd run`: it
// builds the prompt from the memory context and the reminders, makes memory
// tool calls (each with its tool_use id as Idempotency-Key, so a retried
// call is applied once), and signals the end of the turn, all over the
// daemon's unix socket. No network, no model.
//
//	memfsd run --agent demo --home /tmp/demo &
//	go run ./examples/agent-loop -home /tmp/demo -agent demo
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
)

func main() {
	home := flag.String("home", "/tmp/demo", "memfsd home (the socket is <home>/memfsd.sock)")
	agent := flag.String("agent", "demo", "agent id")
	flag.Parse()
	sock := filepath.Join(*home, "memfsd.sock")
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	call := func(method, path, body string, header ...string) string {
		req, _ := http.NewRequest(method, "http://memfsd/v1/agents/"+*agent+path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			log.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	// The model's tool calls, with the ids a harness would get from the API.
	tool := func(toolUseID, input string) {
		fmt.Println(call("POST", "/memory", input, "Idempotency-Key", toolUseID))
	}

	// The prompt: the memory as context (pinned blocks + the file tree),
	// then what happened since the last turn.
	var ctx struct {
		Revision string   `json:"revision"`
		Text     string   `json:"text"`
		Tokens   int      `json:"tokens"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(call("GET", "/context", "")), &ctx); err != nil {
		log.Fatalf("context: %v", err)
	}
	var rem struct {
		Text string `json:"text"`
	}
	json.Unmarshal([]byte(call("GET", "/reminders", "")), &rem)
	prompt := "You are an assistant with a memory.\n\n" + ctx.Text + "\n" + rem.Text
	fmt.Printf("--- prompt (memory revision %s, ~%d tokens) ---\n%s\n---\n", ctx.Revision[:min(7, len(ctx.Revision))], ctx.Tokens, prompt)

	tool("toolu_01", `{"command":"view","path":"/memories"}`)
	tool("toolu_02", `{"command":"create","path":"/memories/notes/user.md","file_text":"---\ndescription: what the user told me\n---\nThe user drinks tea.\n"}`)
	tool("toolu_03", `{"command":"str_replace","path":"/memories/notes/user.md","old_str":"tea","new_str":"green tea","reason":"user corrected their drink"}`)
	tool("toolu_03", `{"command":"str_replace","path":"/memories/notes/user.md","old_str":"tea","new_str":"green tea","reason":"user corrected their drink"}`) // a retry: applied once
	fmt.Println(call("POST", "/turn?wait=8s", ""))                                                                                                             // commit what is pending, push
}
