package main_test

import (
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// homeListing is every path under home but the agents' .git folders and
// the daemon's own runtime files (sockets, logs, pid, status records),
// with its size: what a search must leave as it was.
func homeListing(t *testing.T, home string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(home, p)
		if !d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() && strings.HasPrefix(rel, filepath.Join("agents", "se", "memory")) {
				rel += " " + fi.ModTime().String()
			}
		}
		out = append(out, rel)
		return nil
	})
	return out
}

// TestSearch_BadInputChangesNothing: every kind of bad input to the
// search — an empty or blank query, one over the size bound, one not
// UTF-8, a limit of 0, negative, over 100, huge or not a number, a bad or
// unknown agent id, an unknown shared repository, a folder outside the
// memory — answers a clear error (HTTP 400/404 with a JSON error; the CLI
// exit 1 with the reason on stderr, nothing on stdout), through the daemon
// and from disk, and changes nothing: HEAD, the work tree and the home's
// files (no folder made for an unknown agent). Regex characters are words
// like any other: an answer, not an error.
func TestSearch_BadInputChangesNothing(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "se")
	if out, isErr := p.memory("se", `{"command":"create","path":"/memories/projects/deploy.md","file_text":"---\ndescription: How we deploy\n---\nRun the kubectl rollout.\n"}`); isErr {
		t.Fatal(out)
	}
	dir := memDir(home, "se")
	head := git(t, dir, "rev-parse", "HEAD")
	before := homeListing(t, home)
	unchanged := func(how string) {
		t.Helper()
		if got := git(t, dir, "rev-parse", "HEAD"); got != head {
			t.Fatalf("%s: HEAD moved %s -> %s", how, head, got)
		}
		if st := git(t, dir, "status", "--porcelain", "--ignored"); st != "" {
			t.Fatalf("%s: the work tree changed: %q", how, st)
		}
		after := homeListing(t, home)
		for _, p := range after {
			// A socket, and the search index a good search saves beside
			// the repository (<unit>/search/index), are memfsd's own.
			if !slices.Contains(before, p) && !strings.HasSuffix(p, ".sock") && !strings.HasPrefix(p, filepath.Join("agents", "se", "search")) {
				t.Fatalf("%s: new in home: %s", how, p)
			}
		}
	}

	// HTTP: 400 for the caller's input, 404 for what does not exist.
	long := strings.Repeat("x", 1001)
	for _, c := range []struct {
		path string
		code int
		says string
	}{
		{"/v1/agents/se/search", 400, "empty"},
		{"/v1/agents/se/search?q=", 400, "empty"},
		{"/v1/agents/se/search?q=+++", 400, "empty"},
		{"/v1/agents/se/search?q=***", 400, "no words"},
		{"/v1/agents/se/search?q=" + url.QueryEscape("\xff\xfe"), 400, "UTF-8"},
		{"/v1/agents/se/search?q=" + long, 400, "over 1000 bytes"},
		{"/v1/agents/se/search?q=deploy&limit=0", 400, "from 1 to 100"},
		{"/v1/agents/se/search?q=deploy&limit=-1", 400, "from 1 to 100"},
		{"/v1/agents/se/search?q=deploy&limit=101", 400, "from 1 to 100"},
		{"/v1/agents/se/search?q=deploy&limit=99999999999999999999", 400, "from 1 to 100"},
		{"/v1/agents/se/search?q=deploy&limit=ten", 400, "from 1 to 100"},
		{"/v1/agents/.git/search?q=deploy", 400, "agent"},
		{"/v1/agents/-rf/search?q=deploy", 400, "agent"},
		{"/v1/agents/nobody/search?q=deploy", 404, "nobody"},
		{"/v1/agents/se/search?q=deploy&shared=nope", 404, "nope"},
		{"/v1/agents/se/search?q=deploy&shared=..", 404, ".."},
		{"/v1/agents/se/overview?path=/etc", 400, "under /memories"},
		{"/v1/agents/se/overview?path=/memories/../x", 400, "under /memories"},
		{"/v1/agents/se/overview?path=/memories/nope", 400, "no folder"},
	} {
		var e searchAnswer
		code, err := p.get(c.path, &e)
		if err != nil || code != c.code || !strings.Contains(e.Error, c.says) {
			t.Errorf("GET %.60s: %d %v %q; want %d saying %q", c.path, code, err, e.Error, c.code, c.says)
		}
	}
	var s searchAnswer
	if code, err := p.get("/v1/agents/se/search?q="+url.QueryEscape("[a-z]+.*$ kubectl(rollout)"), &s); err != nil || code != 200 || len(s.Hits) != 1 {
		t.Errorf("regex characters: %d %v %+v", code, err, s)
	}
	unchanged("HTTP")

	cli := func(how string) {
		for _, c := range []struct {
			args []string
			says string
		}{
			{[]string{"--agent", "se"}, "empty"},
			{[]string{"--agent", "se", "   "}, "empty"},
			{[]string{"--agent", "se", "***"}, "no words"},
			{[]string{"--agent", "se", "\xff\xfe"}, "UTF-8"},
			{[]string{"--agent", "se", long}, "over 1000 bytes"},
			{[]string{"--agent", "se", "--limit", "0", "deploy"}, "flag --limit: 0: want 1 to 100"},
			{[]string{"--agent", "se", "--limit", "-1", "deploy"}, "flag --limit: -1: want 1 to 100"},
			{[]string{"--agent", "se", "--limit", "101", "deploy"}, "flag --limit: 101: want 1 to 100"},
			{[]string{"--agent", "se", "--limit", "99999999999999999999", "deploy"}, "--limit"},
			{[]string{"--agent", "se", "--limit", "ten", "deploy"}, "--limit"},
			{[]string{"--agent", ".git", "deploy"}, "flag --agent"},
			{[]string{"--agent", "../se", "deploy"}, "flag --agent"},
			{[]string{"--agent", "", "deploy"}, "flag --agent"},
			{[]string{"--agent", "nobody", "deploy"}, "nobody"},
			{[]string{"--agent", "se", "--folder", "/etc"}, "under /memories"},
			{[]string{"--agent", "se", "--folder", "/memories/nope"}, "no folder"},
			{[]string{"--agent", "se", "--folder", "projects", "deploy"}, "not both"},
		} {
			code, out, errOut := runSplit(t, append([]string{"search", "--home", home}, c.args...)...)
			if code != 1 || out != "" || !strings.Contains(errOut, c.says) {
				t.Errorf("%s: memfsd search %.60q: exit %d, stdout %q, stderr %q; want exit 1 saying %q", how, c.args, code, out, errOut, c.says)
			}
		}
		if code, out, errOut := runSplit(t, "search", "--home", home, "--agent", "se", "[a-z]+.*$", "kubectl(rollout)"); code != 0 || !strings.Contains(out, "/memories/projects/deploy.md") {
			t.Errorf("%s: regex characters: exit %d %q %q", how, code, out, errOut)
		}
		unchanged("CLI " + how)
	}
	cli("through the daemon")
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	before = homeListing(t, home) // the daemon's sockets are gone
	cli("from disk")
}
