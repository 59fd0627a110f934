package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

type remindersAnswer struct {
	Reminders []struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	} `json:"reminders"`
	Text string `json:"text"`
}

func (p *proc) reminders(id string) remindersAnswer {
	p.t.Helper()
	var r remindersAnswer
	if code, err := p.get("/v1/agents/"+id+"/reminders", &r); err != nil || code != 200 {
		p.t.Fatalf("reminders: %d %v", code, err)
	}
	return r
}

func (r remindersAnswer) has(kind string) bool {
	for _, x := range r.Reminders {
		if x.Kind == kind {
			return true
		}
	}
	return false
}

func (p *proc) memory(id, input string) (string, bool) {
	p.t.Helper()
	var res struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	if code, err := p.call("POST", "/v1/agents/"+id+"/memory", input, &res); err != nil || (code != 200 && code != 400) {
		p.t.Fatalf("memory: %d %v", code, err)
	}
	return res.Content, res.IsError
}

func peerClone(t *testing.T, srv *gitserver.Server, id string) string {
	dir := filepath.Join(t.TempDir(), "peer")
	u := strings.Replace(srv.RemoteURL(id), "http://", "http://memfsd:"+token+"@", 1)
	git(t, filepath.Dir(dir), "clone", "-q", u, dir)
	return dir
}

func fastRetryArgs() []string {
	return []string{"--retry-initial", "10ms", "--retry-max", "50ms", "--retry-budget", "300ms"}
}

func TestSurface_MemoryToolThroughAPI(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "mt")
	out, isErr := p.memory("mt", `{"command":"create","path":"/memories/prefs.md","file_text":"likes tea\n","reason":"remember the drink"}`)
	if isErr || out != "File created successfully at: /memories/prefs.md" {
		t.Fatalf("create: %q %v", out, isErr)
	}
	dir := memDir(home, "mt")
	if got := git(t, dir, "log", "-1", "--format=%s"); got != "remember the drink" {
		t.Fatalf("message = %q", got)
	}
	out, isErr = p.memory("mt", `{"command":"str_replace","path":"/memories/prefs.md","old_str":"tea","new_str":"coffee"}`)
	if isErr || !strings.Contains(out, "likes coffee") {
		t.Fatalf("str_replace: %q", out)
	}
	if got := git(t, dir, "log", "-1", "--format=%s"); got != "memory: str_replace prefs.md" {
		t.Fatalf("message = %q", got)
	}
	before := commitCount(t, dir, "HEAD")
	if _, isErr := p.memory("mt", `{"command":"view","path":"/memories/prefs.md"}`); isErr {
		t.Fatal("view failed")
	}
	var bad struct{ Content string }
	if code, _ := p.call("POST", "/v1/agents/mt/memory", `{"command":"view"`, &bad); code != 400 || !strings.Contains(bad.Content, "invalid input") {
		t.Fatalf("broken JSON: %d %q", code, bad.Content)
	}
	// Give the watcher time to see the tool's own writes: they must not
	// become extra commits.
	time.Sleep(300 * time.Millisecond)
	if after := commitCount(t, dir, "HEAD"); after != before {
		t.Fatalf("view/bad input/watcher made %d commits", after-before)
	}
	tr := p.turn("mt")
	if tr.Outcome != "pushed" || tr.Pushed != 2 {
		t.Fatalf("turn = %+v", tr)
	}
}

func TestSurface_ReadOnlyDirectWriteAndOperator(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "ro")
	dir := memDir(home, "ro")
	persona := filepath.Join(dir, "system", "persona.md")
	orig, _ := os.ReadFile(persona)
	os.WriteFile(persona, []byte("I am evil now\n"), 0o600)
	waitFor(t, 10*time.Second, "write undone", func() bool {
		data, _ := os.ReadFile(persona)
		return string(data) == string(orig)
	})
	rej, _ := filepath.Glob(filepath.Join(dir, ".git", "memfsd", "rejected", "*"))
	if len(rej) != 1 {
		t.Fatalf("rejected files: %v", rej)
	}
	if data, _ := os.ReadFile(rej[0]); string(data) != "I am evil now\n" {
		t.Fatalf("rejected bytes = %q", data)
	}
	r := p.reminders("ro")
	if !r.has("read_only_rejected") || !strings.HasPrefix(r.Text, "<system-reminder>") {
		t.Fatalf("reminders = %+v", r)
	}
	// Front-matter escalation by a direct write: undone too.
	os.WriteFile(filepath.Join(dir, "mine.md"), []byte("---\nread_only: true\n---\nlocked by the agent\n"), 0o600)
	waitFor(t, 10*time.Second, "escalation undone", func() bool {
		_, err := os.Stat(filepath.Join(dir, "mine.md"))
		return os.IsNotExist(err)
	})
	p.turn("ro")
	p.reminders("ro")
	p.turn("ro")
	if r := p.reminders("ro"); r.has("read_only_rejected") {
		t.Fatalf("read_only_rejected still there after being told and a turn: %+v", r)
	}
	if git(t, srv.RepoDir("ro"), "show", "main:system/persona.md")+"\n" != string(orig) {
		t.Fatal("the rejected persona reached the remote")
	}
	// The operator's way in.
	f := filepath.Join(t.TempDir(), "persona.md")
	os.WriteFile(f, []byte("---\ndescription: ops\nread_only: true\n---\nI am the new persona.\n"), 0o600)
	cmd := exec.Command(binPath, "block", "set", "persona", "--agent", "ro", "--file", f, "--home", home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("block set: %v %s", err, out)
	}
	if got := git(t, srv.RepoDir("ro"), "show", "main:system/persona.md"); !strings.Contains(got, "I am the new persona.") {
		t.Fatalf("remote persona = %q", got)
	}
	if data, _ := os.ReadFile(persona); !strings.Contains(string(data), "new persona") {
		t.Fatal("operator change undone")
	}
}

func TestSurface_Reminders(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, append([]string{"--agent", "rm"}, fastRetryArgs()...)...)
	dir := memDir(home, "rm")
	if r := p.reminders("rm"); len(r.Reminders) != 0 || r.Text != "" {
		t.Fatalf("fresh agent has reminders: %+v", r)
	}

	t.Run("Conflict", func(t *testing.T) {
		p.memory("rm", `{"command":"create","path":"/memories/c.md","file_text":"base\n"}`)
		p.turn("rm")
		peer := peerClone(t, srv, "rm")
		os.WriteFile(filepath.Join(peer, "c.md"), []byte("theirs\n"), 0o644)
		git(t, peer, "commit", "-qam", "peer edit")
		git(t, peer, "push", "-q")
		p.memory("rm", `{"command":"str_replace","path":"/memories/c.md","old_str":"base","new_str":"mine"}`)
		if tr := p.turn("rm"); tr.Outcome != "conflict" {
			t.Fatalf("turn = %+v", tr)
		}
		r := p.reminders("rm")
		if !r.has("conflict") || !strings.Contains(r.Text, ".conflict-") {
			t.Fatalf("reminders = %+v", r)
		}
		copies, _ := filepath.Glob(filepath.Join(dir, "c.conflict-*.md"))
		if len(copies) != 1 {
			t.Fatalf("copies: %v", copies)
		}
		p.memory("rm", `{"command":"delete","path":"/memories/`+filepath.Base(copies[0])+`"}`)
		p.turn("rm")
		if p.reminders("rm").has("conflict") {
			t.Fatal("conflict reminder stays after the copy is gone")
		}
	})
	t.Run("SyncDelayed", func(t *testing.T) {
		f := srv.AddFault(&gitserver.Fault{Match: "/v1/git/rm/", Count: -1, Status: 520})
		p.memory("rm", `{"command":"create","path":"/memories/d.md","file_text":"d\n"}`)
		if tr := p.turn("rm"); tr.Outcome != "delayed" || tr.Status.State != "degraded" {
			t.Fatalf("turn = %+v", tr)
		}
		if !p.reminders("rm").has("sync_delayed") {
			t.Fatal("no sync_delayed reminder")
		}
		srv.RemoveFault(f)
		// The background retry may push it before the turn does (issue 38).
		if tr := p.turn("rm"); (tr.Outcome != "pushed" && tr.Outcome != "clean") || tr.Status.Ahead != 0 {
			t.Fatalf("turn after recovery = %+v", tr)
		}
		if p.reminders("rm").has("sync_delayed") {
			t.Fatal("sync_delayed stays after a good sync")
		}
	})
	t.Run("SyncFailed", func(t *testing.T) {
		f := srv.AddFault(&gitserver.Fault{Match: "/v1/git/rm/", Count: -1, Status: 401})
		if tr := p.turn("rm"); tr.Outcome != "failed" || tr.Status.State != "error" {
			t.Fatalf("turn = %+v", tr)
		}
		if r := p.reminders("rm"); !r.has("sync_failed") {
			t.Fatalf("reminders = %+v", r)
		}
		srv.RemoveFault(f)
		p.turn("rm")
		if p.reminders("rm").has("sync_failed") {
			t.Fatal("sync_failed stays after a good sync")
		}
	})
	t.Run("HistoryRecovered", func(t *testing.T) {
		fresh := filepath.Join(t.TempDir(), "fresh")
		os.MkdirAll(fresh, 0o755)
		git(t, fresh, "init", "-q", "-b", "main")
		os.WriteFile(filepath.Join(fresh, "server.md"), []byte("new server\n"), 0o644)
		git(t, fresh, "add", ".")
		git(t, fresh, "commit", "-qm", "reset")
		u := strings.Replace(srv.RemoteURL("rm"), "http://", "http://memfsd:"+token+"@", 1)
		git(t, fresh, "push", "-q", "--force", u, "main")
		p.turn("rm")
		st := p.status("rm")
		r := p.reminders("rm")
		if !r.has("history_recovered") {
			t.Fatalf("reminders = %+v (status %+v)", r, st)
		}
		for _, b := range strings.Fields(git(t, dir, "for-each-ref", "--format=%(refname)", "refs/memfsd/backup/")) {
			git(t, dir, "update-ref", "-d", b)
		}
		if p.reminders("rm").has("history_recovered") {
			t.Fatal("history_recovered stays after the backup refs are gone")
		}
	})
	t.Run("MassDeleteHeld", func(t *testing.T) {
		for i := 0; i < 25; i++ {
			os.WriteFile(filepath.Join(dir, "m"+string(rune('a'+i))+".md"), []byte("x\n"), 0o600)
		}
		waitFor(t, 20*time.Second, "files committed", func() bool { return len(p.status("rm").Dirty) == 0 })
		p.turn("rm")
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() != ".git" {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
		waitFor(t, 10*time.Second, "held", func() bool { return p.reminders("rm").has("mass_delete_held") })
		git(t, dir, "checkout", "--", ".")
		waitFor(t, 10*time.Second, "released", func() bool { return !p.reminders("rm").has("mass_delete_held") })
		if st := p.status("rm"); st.State == "error" {
			t.Fatalf("state after restore: %+v", st)
		}
	})
}

// A direct write past a block's limit is committed and raises
// limit_exceeded naming the file, until the file is short again.
func TestSurface_LimitExceededByADirectWrite(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lim")
	dir := memDir(home, "lim")
	f := filepath.Join(dir, "notes.md")
	long := "---\ndescription: short notes\nlimit: 10\n---\n" + strings.Repeat("x", 25) + "\n"
	os.WriteFile(f, []byte(long), 0o600)
	// os.WriteFile truncates, then writes: on a loaded machine the empty
	// file may settle and be committed first (then an update follows).
	committed := func(content string) func() bool {
		return func() bool {
			out, err := gitTry(dir, "show", "HEAD:notes.md")
			return err == nil && out+"\n" == content
		}
	}
	waitFor(t, 10*time.Second, "the long notes committed", committed(long))
	var r remindersAnswer
	waitFor(t, 10*time.Second, "limit_exceeded", func() bool { r = p.reminders("lim"); return r.has("limit_exceeded") })
	if !strings.Contains(r.Text, "/memories/notes.md (26 characters, limit 10)") {
		t.Fatalf("reminders = %+v", r)
	}
	short := "---\ndescription: short notes\nlimit: 10\n---\nshort\n"
	os.WriteFile(f, []byte(short), 0o600)
	waitFor(t, 10*time.Second, "the short notes committed", committed(short))
	waitFor(t, 10*time.Second, "limit_exceeded gone after shortening", func() bool { return !p.reminders("lim").has("limit_exceeded") })
}

func TestSurface_Context(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "cx")
	dir := memDir(home, "cx")
	if out, isErr := p.memory("cx", `{"command":"create","path":"/memories/notes/plan.md","file_text":"---\ndescription: the plan\n---\nsecret body\n"}`); isErr {
		t.Fatal(out)
	}
	var c struct {
		Revision string   `json:"revision"`
		Text     string   `json:"text"`
		Tokens   int      `json:"tokens"`
		Warnings []string `json:"warnings"`
	}
	if code, err := p.get("/v1/agents/cx/context", &c); err != nil || code != 200 {
		t.Fatalf("context: %d %v", code, err)
	}
	if c.Revision != git(t, dir, "rev-parse", "HEAD") || !strings.Contains(c.Text, "plan.md — the plan") || strings.Contains(c.Text, "secret body") || c.Tokens == 0 {
		t.Fatalf("context = %+v", c)
	}
	out, err := exec.Command(binPath, "context", "--agent", "cx", "--home", home).Output()
	if err != nil || !strings.Contains(string(out), "<system/persona.md>") {
		t.Fatalf("memfsd context: %v\n%s", err, out)
	}
}
