package main_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

type searchAnswer struct {
	Hits []struct {
		Path  string  `json:"path"`
		Score float64 `json:"score"`
		Trail []struct {
			Folder string  `json:"folder"`
			Score  float64 `json:"score"`
		} `json:"trail"`
		Lines []struct {
			Line int    `json:"line"`
			Text string `json:"text"`
		} `json:"lines"`
	} `json:"hits"`
	Error string `json:"error"`
}

// TestSearch_APIAndCLI: GET .../search finds a tool write with its trail
// and lines, .../overview shows a folder's children with their L0s, and
// the memory_search tool route answers both as a tool does; bad
// input answers 400 with a JSON error and writes nothing; the CLI prints
// the same through the daemon and, once it is stopped, from disk.
func TestSearch_APIAndCLI(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "se")
	if out, isErr := p.memory("se", `{"command":"create","path":"/memories/projects/deploy.md","file_text":"---\ndescription: How we deploy\n---\nRun the kubectl rollout.\n"}`); isErr {
		t.Fatal(out)
	}
	var s searchAnswer
	if code, err := p.get("/v1/agents/se/search?q=kubectl+rollout&limit=5", &s); err != nil || code != 200 {
		t.Fatalf("search: %d %v", code, err)
	}
	if len(s.Hits) != 1 || s.Hits[0].Path != "projects/deploy.md" || len(s.Hits[0].Trail) != 1 || s.Hits[0].Trail[0].Folder != "projects" ||
		len(s.Hits[0].Lines) != 1 || s.Hits[0].Lines[0].Line != 4 {
		t.Fatalf("search answer %+v", s)
	}
	var o struct{ Text string }
	if code, _ := p.get("/v1/agents/se/overview?path=/memories/projects", &o); code != 200 || o.Text != "/memories/projects: 1 file, 0 folders\n- deploy.md — How we deploy\n" {
		t.Fatalf("overview %d %q", code, o.Text)
	}
	head := git(t, memDir(home, "se"), "rev-parse", "HEAD")
	// The memory_search tool beside the memory tool: the same hits and
	// overview, in the memory route's answer shape; bad input is a tool
	// error (400), and nothing is written.
	type toolAnswer struct {
		Content string          `json:"content"`
		IsError bool            `json:"is_error"`
		Result  json.RawMessage `json:"result"`
	}
	var ta toolAnswer
	if code, err := p.call("POST", "/v1/agents/se/memory_search", `{"query":"kubectl rollout","limit":5}`, &ta); err != nil || code != 200 || ta.IsError ||
		!strings.Contains(ta.Content, "/memories/projects/deploy.md  How we deploy") || !strings.Contains(ta.Content, "4\tRun the kubectl rollout.") {
		t.Fatalf("memory_search: %d %v %+v", code, err, ta)
	}
	var viaTool searchAnswer
	if err := json.Unmarshal(ta.Result, &viaTool); err != nil || len(viaTool.Hits) != 1 || viaTool.Hits[0].Path != "projects/deploy.md" || viaTool.Hits[0].Trail[0].Folder != "projects" {
		t.Fatalf("memory_search result: %v %s", err, ta.Result)
	}
	if code, _ := p.call("POST", "/v1/agents/se/memory_search", `{"folder":"/memories/projects"}`, &ta); code != 200 || ta.IsError || ta.Content != o.Text {
		t.Fatalf("memory_search folder: %d %+v, want %q", code, ta, o.Text)
	}
	for _, bad := range []string{`{"query":"a","folder":"projects"}`, `{"query":"a","regex":true}`, `{"query":""}`, `{"query":"a","limit":1000}`,
		`{"folder":"/memories/../etc"}`, `{"folder":"nowhere"}`, `not json`, `{"query":"a"} {"query":"b"}`, `{"query":"` + strings.Repeat("x", 1001) + `"}`} {
		ta = toolAnswer{}
		if code, err := p.call("POST", "/v1/agents/se/memory_search", bad, &ta); err != nil || code != 400 || !ta.IsError || ta.Content == "" {
			t.Fatalf("memory_search %.40s: %d %v %+v", bad, code, err, ta)
		}
	}
	if code, _ := p.call("POST", "/v1/agents/se/memory_search?shared=nope", `{"query":"a"}`, &ta); code != 404 || !ta.IsError || !strings.Contains(ta.Content, "nope") {
		t.Fatalf("memory_search unknown shared: %d %+v", code, ta)
	}
	for _, bad := range []string{"", "q=", "q=" + url.QueryEscape("\xff"), "q=" + strings.Repeat("x", 1001), "q=a&limit=0", "q=a&limit=x"} {
		var e searchAnswer
		if code, err := p.get("/v1/agents/se/search?"+bad, &e); err != nil || code != 400 || e.Error == "" {
			t.Fatalf("%.30q: %d %v %+v", bad, code, err, e)
		}
	}
	var e searchAnswer
	if code, _ := p.get("/v1/agents/se/search?q=a&shared=nope", &e); code != 404 || !strings.Contains(e.Error, "nope") {
		t.Fatalf("unknown shared: %d %+v", code, e)
	}
	// A shared repository the agent is attached to.
	if code, err := p.adminCall("PUT", "/v1/agents/se/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
		t.Fatalf("attach: %d %v", code, err)
	}
	waitFor(t, 30*time.Second, "shared clone", func() bool {
		_, err := os.Stat(filepath.Join(home, "shared", "team", "memory", ".git"))
		return err == nil
	})
	if out, isErr := p.sharedTool("se", "team", `{"command":"create","path":"/memories/ops/oncall.md","file_text":"Pager rotation is weekly.\n"}`); isErr {
		t.Fatal(out)
	}
	if code, _ := p.get("/v1/agents/se/search?q=pager+rotation&shared=team", &s); code != 200 || len(s.Hits) != 1 || s.Hits[0].Path != "ops/oncall.md" {
		t.Fatalf("shared search: %d %+v", code, s)
	}
	if code, _ := p.call("POST", "/v1/agents/se/memory_search?shared=team", `{"query":"pager rotation"}`, &ta); code != 200 || !strings.Contains(ta.Content, "/memories/ops/oncall.md") {
		t.Fatalf("memory_search shared: %d %+v", code, ta)
	}
	if code, _ := p.get("/v1/agents/se/search?q=pager+rotation", &s); code != 200 || len(s.Hits) != 0 {
		t.Fatalf("own search found the shared file: %d %+v", code, s)
	}
	if got := git(t, memDir(home, "se"), "rev-parse", "HEAD"); got != head {
		t.Fatal("a bad search moved HEAD")
	}
	check := func(how string) {
		code, out, errOut := runSplit(t, "search", "--home", home, "--agent", "se", "kubectl")
		if code != 0 || !strings.Contains(out, "/memories/projects/deploy.md  How we deploy") || !strings.Contains(out, "via projects/") || !strings.Contains(out, "4\tRun the kubectl rollout.") {
			t.Fatalf("%s: search: %d %q %q", how, code, out, errOut)
		}
		code, out, _ = runSplit(t, "search", "--home", home, "--agent", "se", "--json", "--limit", "1", "deploy")
		var js searchAnswer
		if err := json.Unmarshal([]byte(out), &js); code != 0 || err != nil || len(js.Hits) != 1 {
			t.Fatalf("%s: --json: %d %v %s", how, code, err, out)
		}
		if code, out, _ = runSplit(t, "search", "--home", home, "--agent", "se", "--folder", "projects"); code != 0 || !strings.Contains(out, "- deploy.md — How we deploy") {
			t.Fatalf("%s: --folder: %d %q", how, code, out)
		}
		if code, _, errOut := runSplit(t, "search", "--home", home, "--agent", "se", "***"); code != 1 || !strings.Contains(errOut, "no words") {
			t.Fatalf("%s: bad query: %d %q", how, code, errOut)
		}
	}
	check("through the daemon")
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	check("from disk")
}
