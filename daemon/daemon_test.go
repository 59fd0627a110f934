package daemon

import (
	"context"
	"encoding/json"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
)

// TestDaemon_ImportsNoGitmem: the daemon talks to agents only.
func TestDaemon_ImportsNoGitmem(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("*.go")
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/memfsd/memfsd/gitmem" {
				t.Errorf("%s imports gitmem: the daemon must go through agent", f)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no files checked")
	}
}

func TestListen_UnixSocket(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "run", "memfsd.sock")
	l, err := Listen("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	go http.Serve(l, http.NotFoundHandler())
	if _, err := Listen("unix://" + sock); err == nil || !strings.Contains(err.Error(), "another memfsd") {
		t.Fatalf("second listen on a served socket: %v", err)
	}
	l.Close()
	// A socket file left behind (no one serving) is replaced.
	os.WriteFile(sock, nil, 0o600)
	l2, err := Listen("unix://" + sock)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()
	if _, err := Listen("no-port"); err == nil {
		t.Fatal("bad address accepted")
	}
}

func TestWaitParam(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]time.Duration{"": DefaultTurnWait, "wait=1s": time.Second, "wait=0s": 0} {
		r := httptest.NewRequest("POST", "/x?"+q, nil)
		if got, err := waitParam(r, DefaultTurnWait); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", q, got, err, want)
		}
	}
	for _, q := range []string{"wait=-1s", "wait=abc", "wait=11m"} {
		if _, err := waitParam(httptest.NewRequest("POST", "/x?"+q, nil), 0); err == nil {
			t.Errorf("%q accepted", q)
		}
	}
}

func TestRelPath(t *testing.T) {
	t.Parallel()
	root := "/m/agents/a/memory"
	cases := map[string]string{
		root + "/notes/a.md":             "notes/a.md",
		root + "/.git/index":             "-",
		root + "/.git":                   "-",
		root + "/notes/.memfsd-tmp-1234": "notes/.memfsd-tmp-1234", // a file like any other (issue 27)
		"/elsewhere/a.md":                "-",
		// Below an untrackable folder (worktree.Check): that folder, told
		// once by the pipeline whatever is written inside.
		root + "/notes/.gitignore":       "notes/.gitignore",
		root + "/sub/.git":               "sub/.git",
		root + "/sub/.git/config":        "sub/.git",
		root + "/.GIT/objects/ab/cd":     ".GIT",
		root + "/Deep/x/.Git/config":     "Deep/x/.Git",
		root + "/w/git~1/x":              "w/git~1",
		root + "/sub/.memfsd-tmp-take-1": "sub/.memfsd-tmp-take-1",
	}
	for p, want := range cases {
		got, ok := relPath(root, p)
		if !ok {
			got = "-"
		}
		if got != want {
			t.Errorf("relPath(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestHandler_EmbeddedAgent runs the API against the embedded remote: no
// server, real repositories, real watcher.
func TestHandler_EmbeddedAgent(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir()}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Debounce = 20 * time.Millisecond
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	srv := httptest.NewServer(d.AdminHandler())
	t.Cleanup(srv.Close)
	call := func(method, path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatalf("%s %s: decode: %v", method, path, err)
			}
		}
		return resp.StatusCode
	}
	if code := call("GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz with no agents = %d", code)
	}
	if code := call("GET", "/v1/agents/a..b%2F/status", "", nil); code != 400 && code != 404 {
		t.Fatalf("bad id = %d", code)
	}
	if code := call("GET", "/v1/agents/nobody/status", "", nil); code != 404 {
		t.Fatalf("unmanaged agent = %d", code)
	}
	var st agent.Status
	if code := call("PUT", "/v1/agents/emb?wait=30s", "", &st); code != 200 || !st.Ready || st.Head == "" {
		t.Fatalf("PUT agent = %d %+v", code, st)
	}
	waitStatus := func(what string, ok func(agent.Status) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var s agent.Status
			call("GET", "/v1/agents/emb/status", "", &s)
			if ok(s) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v", what, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Ready (a usable work tree) comes before the start-up sync ends.
	waitStatus("start-up sync", func(s agent.Status) bool { return s.LastSyncAt != nil })
	var res struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	if code := call("POST", "/v1/agents/emb/memory", `{"command":"create","path":"/memories/a.md","file_text":"hi\n"}`, &res); code != 200 || res.IsError {
		t.Fatalf("memory create = %d %+v", code, res)
	}
	// A direct write, committed by the shared watcher through the agent.
	os.WriteFile(filepath.Join(st.Dir, "b.md"), []byte("direct\n"), 0o600)
	waitStatus("direct write committed", func(s agent.Status) bool { return len(s.Dirty) == 0 && s.Ahead >= 2 })
	var tr agent.TurnResult
	if code := call("POST", "/v1/agents/emb/turn?wait=30s", "", &tr); code != 200 || tr.Outcome != agent.OutcomePushed || tr.Status.Ahead != 0 {
		t.Fatalf("turn = %d %+v", code, tr)
	}
	var list struct {
		Agents []agent.Status `json:"agents"`
	}
	if code := call("GET", "/v1/agents", "", &list); code != 200 || len(list.Agents) != 1 || list.Agents[0].State != agent.StateClean {
		t.Fatalf("agents = %d %+v", code, list)
	}
}
