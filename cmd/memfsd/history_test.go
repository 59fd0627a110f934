package main_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

type historyAnswer struct {
	FilePath string `json:"file_path"`
	Limit    int    `json:"limit"`
	Commits  []struct {
		SHA        string `json:"sha"`
		Message    string `json:"message"`
		Body       string `json:"body"`
		Timestamp  string `json:"timestamp"`
		AuthorName string `json:"author_name"`
		Changes    []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
	} `json:"commits"`
	Error string `json:"error"`
}

type fileAnswer struct {
	FilePath string  `json:"file_path"`
	Ref      string  `json:"ref"`
	SHA      string  `json:"sha"`
	Content  *string `json:"content"`
	Encoding string  `json:"encoding"`
	Error    string  `json:"error"`
}

// runSplit runs the binary and returns its exit code, stdout and stderr apart.
func runSplit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stdout.String(), stderr.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// TestHistory_APIAndCLI: after tool writes (one with a letta-code style
// reason body) and a direct write, GET .../history lists what `git log --
// P` lists, with subject, body, author, date and the kind of change;
// GET .../file reads what `git show R:P` prints for a commit id, a short
// id, HEAD~N and main; on the agent's own socket too. Bad input answers
// 400 (a missing file 404) with a JSON error and changes nothing. The CLI
// prints the same through the daemon and, once it is stopped, from disk.
func TestHistory_APIAndCLI(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "hi")
	dir := memDir(home, "hi")
	if out, isErr := p.memory("hi", `{"command":"create","path":"/memories/notes/a.md","file_text":"one\n"}`); isErr {
		t.Fatal(out)
	}
	if out, isErr := p.memory("hi", `{"command":"str_replace","path":"/memories/notes/a.md","old_str":"one","new_str":"two"}`); isErr {
		t.Fatal(out)
	}
	os.WriteFile(filepath.Join(dir, "notes", "b.md"), []byte("direct\n"), 0o600)
	waitFor(t, 10*time.Second, "direct write committed", func() bool {
		return strings.Contains(git(t, dir, "log", "-1", "--format=%s"), "notes/b.md")
	})
	if out, isErr := p.memory("hi", `{"command":"delete","path":"/memories/notes/a.md"}`); isErr {
		t.Fatal(out)
	}
	// A commit with a body: an idempotent call's trailer.
	req, _ := http.NewRequest("POST", "http://memfsd/v1/agents/hi/memory", strings.NewReader(`{"command":"create","path":"/memories/notes/c.md","file_text":"c\n"}`))
	req.Header.Set("Idempotency-Key", "toolu_hist_1")
	if resp, err := p.api.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("idempotent create: %v %v", resp, err)
	}
	before := git(t, dir, "rev-parse", "HEAD")

	for _, tc := range []struct{ path, limit string }{{"notes/a.md", ""}, {"notes", "2"}, {"", "200"}, {"notes/", "1"}, {"/memories/notes/a.md", ""}, {"gone.md", ""}} {
		var h historyAnswer
		q := url.Values{"path": {tc.path}}
		if tc.limit != "" {
			q.Set("limit", tc.limit)
		}
		if code, err := p.get("/v1/agents/hi/history?"+q.Encode(), &h); err != nil || code != 200 {
			t.Fatalf("history %v: %d %v %s", tc, code, err, h.Error)
		}
		args := []string{"log", "--format=%H", "-n" + map[string]string{"": "20"}[tc.limit] + tc.limit}
		if gp := strings.TrimPrefix(tc.path, "/memories/"); gp != "" {
			args = append(args, "--", gp)
		}
		var got []string
		for _, c := range h.Commits {
			got = append(got, c.SHA)
		}
		if want := strings.Fields(git(t, dir, args...)); !slices.Equal(got, want) {
			t.Fatalf("history %v = %v, git log: %v", tc, got, want)
		}
	}
	var h historyAnswer
	p.get("/v1/agents/hi/history?path=notes/a.md", &h)
	if len(h.Commits) != 3 || h.Commits[0].Message != "memory: delete notes/a.md" || h.Commits[0].Changes[0].Kind != "delete" ||
		h.Commits[1].Changes[0].Kind != "update" || h.Commits[2].Changes[0].Kind != "create" || h.Commits[2].AuthorName != "hi" || h.Limit != 20 {
		t.Fatalf("history of notes/a.md: %+v", h)
	}
	if _, err := time.Parse(time.RFC3339, h.Commits[0].Timestamp); err != nil {
		t.Fatalf("timestamp %q: %v", h.Commits[0].Timestamp, err)
	}
	p.get("/v1/agents/hi/history?path=notes/c.md", &h)
	if len(h.Commits) != 1 || h.Commits[0].Message != "memory: create notes/c.md" || !strings.HasPrefix(h.Commits[0].Body, "Memory-Call: toolu_hist_1\nMemory-Call-Check: ") {
		t.Fatalf("history of notes/c.md: %+v", h)
	}

	// A file at revisions, on the shared and on the agent's own socket.
	own := sockClient(agentSock(home, "hi"))
	aAt := git(t, dir, "rev-list", "-1", "HEAD", "--", "notes/b.md") // a.md was "two" then
	for _, rev := range []string{aAt, aAt[:7], "HEAD~2", "main~2"} {
		for _, c := range []*proc{p, {t: t, api: own}} {
			var f fileAnswer
			code, err := c.get("/v1/agents/hi/file?path=notes/a.md&rev="+rev, &f)
			if err != nil || code != 200 || f.Content == nil || *f.Content != git(t, dir, "show", rev+":notes/a.md")+"\n" || f.Encoding != "utf8" || f.Ref != rev {
				t.Fatalf("file at %s: %d %v %+v", rev, code, err, f)
			}
		}
	}
	var f fileAnswer
	if code, _ := p.get("/v1/agents/hi/file?path=notes/c.md", &f); code != 200 || *f.Content != "c\n" || f.SHA != before {
		t.Fatalf("file at HEAD: %d %+v", code, f)
	}
	if code, _ := p.get("/v1/agents/hi/file?path=notes/a.md&rev=HEAD", &f); code != 404 || !strings.Contains(f.Error, "no such file") || f.FilePath != "notes/a.md" || f.Content != nil {
		t.Fatalf("deleted file: %d %+v", code, f)
	}
	var other struct{ Error string }
	if code, _ := own.Get("http://memfsd/v1/agents/other/file?path=notes/c.md"); code == nil || code.StatusCode != 403 {
		t.Fatalf("own socket, another agent's file: %v", code)
	}
	for _, bad := range []string{
		"history?limit=0", "history?limit=201", "history?limit=x", "history?path=../x", "history?path=.git/config", "history?path=notes/.git",
		"file?path=../../etc/passwd", "file?path=.git/config", "file?path=notes/a.md&rev=nope", "file?path=notes/a.md&rev=HEAD~99",
		"file?path=notes/a.md&rev=../../config", "file?path=notes/a.md&rev=" + url.QueryEscape("HEAD:x"), "file?path=",
	} {
		other.Error = ""
		if code, err := p.get("/v1/agents/hi/"+bad, &other); err != nil || code != 400 || other.Error == "" {
			t.Errorf("%s: %d %v %q, want 400 with an error", bad, code, err, other.Error)
		}
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != before {
		t.Fatalf("reads moved HEAD: %s -> %s", before, got)
	}

	// The CLI, through the daemon and then from disk.
	wantLog := git(t, dir, "log", "--format=%H", "--", "notes/a.md")
	check := func(how string) {
		code, out, errOut := runSplit(t, "history", "--home", home, "--agent", "hi", "--path", "notes/a.md")
		var shown []string
		for _, l := range strings.Split(out, "\n") {
			if l != "" && !strings.HasPrefix(l, " ") {
				shown = append(shown, strings.Fields(l)[0])
			}
		}
		var want []string
		for _, h := range strings.Fields(wantLog) {
			want = append(want, h[:12])
		}
		if code != 0 || !slices.Equal(shown, want) || !strings.Contains(out, "    delete notes/a.md") {
			t.Fatalf("%s: history: %d %q %q", how, code, out, errOut)
		}
		if code, out, errOut := runSplit(t, "show", "--home", home, "--agent", "hi", "--path", "notes/a.md", "--rev", aAt[:8]); code != 0 || out != "two\n" {
			t.Fatalf("%s: show: %d %q %q", how, code, out, errOut)
		}
		if code, out, errOut := runSplit(t, "show", "--home", home, "--agent", "hi", "--path", "notes/a.md"); code != 1 || out != "" || !strings.Contains(errOut, "no such file at that revision") {
			t.Fatalf("%s: show of a deleted file: %d %q %q", how, code, out, errOut)
		}
		if code, _, errOut := runSplit(t, "show", "--home", home, "--agent", "hi", "--path", "notes/a.md", "--rev", "nope"); code != 1 || !strings.Contains(errOut, "unknown revision") {
			t.Fatalf("%s: show at an unknown rev: %d %q", how, code, errOut)
		}
		if code, _, errOut := runSplit(t, "history", "--home", home, "--agent", "hi", "--limit", "0"); code != 1 || !strings.Contains(errOut, "--limit") {
			t.Fatalf("%s: limit 0: %d %q", how, code, errOut)
		}
	}
	check("through the daemon")
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	check("from disk")
	var js historyAnswer
	_, out, _ := runSplit(t, "history", "--home", home, "--agent", "hi", "--json", "--limit", "1")
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js.Commits) != 1 || js.Commits[0].SHA != before {
		t.Fatalf("--json: %v %s", err, out)
	}
}
