// Command agent-loop plays an agent against a running `memfsd run`: it
// views its memory, writes a note, edits it, and signals the end of the
// turn, all over the daemon's unix socket. No network, no model.
//
//	memfsd run --agent demo --home /tmp/demo &
//	go run ./examples/agent-loop -home /tmp/demo -agent demo
package main

import (
	"context"
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
	call := func(method, path, body string) string {
		req, _ := http.NewRequest(method, "http://memfsd/v1/agents/"+*agent+path, strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil {
			log.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	tool := func(input string) { fmt.Println(call("POST", "/memory", input)) }

	fmt.Println(call("GET", "/reminders", "")) // what happened since the last turn
	tool(`{"command":"view","path":"/memories"}`)
	tool(`{"command":"create","path":"/memories/notes/user.md","file_text":"The user drinks tea.\n"}`)
	tool(`{"command":"str_replace","path":"/memories/notes/user.md","old_str":"tea","new_str":"green tea","reason":"user corrected their drink"}`)
	fmt.Println(call("POST", "/turn?wait=8s", "")) // commit what is pending, push
}
