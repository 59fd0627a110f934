package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

type sharedAnswer struct {
	Shared []struct {
		Name      string `json:"name"`
		Write     string `json:"write"`
		RemoteURL string `json:"remote_url"`
		View      string `json:"view"`
	} `json:"shared"`
	Error string `json:"error"`
}

func (p *proc) sharedList(id string) sharedAnswer {
	p.t.Helper()
	var out sharedAnswer
	if code, err := p.get("/v1/agents/"+id+"/shared", &out); err != nil || code != 200 {
		p.t.Fatalf("GET shared of %s: %d %v %s", id, code, err, out.Error)
	}
	return out
}

// TestShared_AttachListDetachPersist: attaching is the operator's (the
// agent's socket answers 403); memfsd shared attach goes through the admin
// socket, the default remote is letta-code's
// <base>/v1/git/<agent>/repositories/<name>.git, a second agent attached
// to the name takes the home's remote, another URL for it is refused 409,
// bad policies and names 400; the attachments survive a restart and
// memfsd shared detach drops one.
func TestShared_AttachListDetachPersist(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "s1", "--agent", "s2")

	var fail sharedAnswer
	if code, _ := p.call("PUT", "/v1/agents/s1/shared/team", `{"write":"allow"}`, &fail); code != 403 || !strings.Contains(fail.Error, "admin socket") {
		t.Fatalf("PUT shared on the agent's socket: %d %+v", code, fail)
	}
	if code, out := runCLI(t, srv, home, "shared", "attach", "team", "--agent", "s1", "--write", "allow"); code != 0 || !strings.Contains(out, "team") {
		t.Fatalf("memfsd shared attach: %d %s", code, out)
	}
	if code, out := runCLI(t, srv, home, "shared", "attach", "team", "--agent", "s2", "--write", "propose"); code != 0 {
		t.Fatalf("memfsd shared attach s2: %d %s", code, out)
	}
	want := srv.SharedURL("s1", "team")
	l1, l2 := p.sharedList("s1"), p.sharedList("s2")
	if len(l1.Shared) != 1 || l1.Shared[0].Write != "allow" || l1.Shared[0].RemoteURL != want {
		t.Fatalf("s1's shared: %+v, want team allow %s", l1, want)
	}
	if len(l2.Shared) != 1 || l2.Shared[0].Write != "propose" || l2.Shared[0].RemoteURL != want {
		t.Fatalf("s2's shared: %+v, want team propose at s1's URL %s (one name, one repository per home)", l2, want)
	}
	for _, bad := range []struct {
		path, body string
		code       int
	}{
		{"/v1/agents/s2/shared/team", `{"write":"maybe"}`, 400},
		{"/v1/agents/s2/shared/memory", `{"write":"allow"}`, 400},
		{"/v1/agents/s2/shared/team", `{"remote_url":"` + srv.SharedURL("s2", "other") + `"}`, 409},
		{"/v1/agents/s2/shared/x", `{"remote_url":"https://u:p@host/x.git"}`, 400},
	} {
		if code, _ := p.adminCall("PUT", bad.path, bad.body, &fail); code != bad.code {
			t.Fatalf("PUT %s %s: %d %+v, want %d", bad.path, bad.body, code, fail, bad.code)
		}
	}

	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.logs.String())
	}
	p = startDaemon(t, srv, home, "--agent", "s1", "--agent", "s2")
	if l := p.sharedList("s2"); len(l.Shared) != 1 || l.Shared[0].Write != "propose" {
		t.Fatalf("s2's shared after a restart: %+v", l)
	}
	if code, out := runCLI(t, srv, home, "shared", "detach", "team", "--agent", "s2"); code != 0 {
		t.Fatalf("memfsd shared detach: %d %s", code, out)
	}
	if l := p.sharedList("s2"); len(l.Shared) != 0 {
		t.Fatalf("s2's shared after detach: %+v", l)
	}
	code, out := runCLI(t, srv, home, "shared", "list", "--agent", "s1", "--json")
	var listed sharedAnswer
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Shared) != 1 {
		t.Fatalf("memfsd shared list --json: %d %s", code, out)
	}
	if code, out := runCLI(t, srv, home, "shared", "detach", "nope", "--agent", "s1"); code == 0 {
		t.Fatalf("detach of a name not attached succeeded: %s", out)
	}
}

// sharedTool runs a memory-tool call of agent id on its shared repository.
func (p *proc) sharedTool(id, name, input string) (string, bool) {
	p.t.Helper()
	var res struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	code, err := p.call("POST", "/v1/agents/"+id+"/memory?shared="+name, input, &res)
	if err != nil || (code != 200 && code != 404) {
		p.t.Fatalf("shared tool %s %s: %d %v", id, input, code, err)
	}
	return res.Content, res.IsError
}

// TestShared_OneCloneToolWritesAllowDeny: three agents of one daemon
// attached to one shared repository get one clone (<home>/shared/team)
// and one pipeline: the allowed agents' tool writes are commits authored
// by each agent, pushed by a turn; a read-only block in the shared
// repository is refused like the agent's own; the denied agent's write is
// refused and reaches no branch; each context shows the shared memory
// after the agent's own; git fsck --strict is clean.
func TestShared_OneCloneToolWritesAllowDeny(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "a1", "--agent", "a2", "--agent", "a3")
	for id, w := range map[string]string{"a1": "allow", "a2": "allow", "a3": "deny"} {
		if code, err := p.adminCall("PUT", "/v1/agents/"+id+"/shared/team", `{"write":"`+w+`"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach %s: %d %v", id, code, err)
		}
	}
	waitFor(t, 30*time.Second, "shared clone", func() bool {
		_, err := os.Stat(filepath.Join(home, "shared", "team", "memory", ".git"))
		return err == nil
	})
	for _, id := range []string{"a1", "a2"} {
		if out, isErr := p.sharedTool(id, "team", `{"command":"create","path":"/memories/notes/`+id+`.md","file_text":"from `+id+`\n"}`); isErr {
			t.Fatalf("%s's shared write: %s", id, out)
		}
	}
	if out, isErr := p.sharedTool("a3", "team", `{"command":"create","path":"/memories/notes/a3.md","file_text":"denied\n"}`); !isErr || !strings.Contains(out, "write: deny") {
		t.Fatalf("a3's write under deny: %v %s", isErr, out)
	}
	if out, isErr := p.sharedTool("a3", "team", `{"command":"view","path":"/memories/notes/a1.md"}`); isErr || !strings.Contains(out, "from a1") {
		t.Fatalf("a3's view under deny: %v %s", isErr, out)
	}
	if out, isErr := p.sharedTool("a2", "other", `{"command":"view","path":"/memories"}`); !isErr {
		t.Fatalf("a call on a repository not attached answered: %s", out)
	}
	// An operator's read-only block in the shared repository.
	peer := t.TempDir()
	tr := p.turn("a1")
	if tr.Outcome == "failed" {
		t.Fatalf("turn: %+v", tr)
	}
	git(t, peer, "clone", "-q", strings.Replace(srv.SharedURL("op", "team"), "http://", "http://memfsd:"+token+"@", 1), "c")
	c := filepath.Join(peer, "c")
	os.WriteFile(filepath.Join(c, "rules.md"), []byte("---\ndescription: team rules\nread_only: true\n---\nbe kind\n"), 0o644)
	git(t, c, "add", ".")
	git(t, c, "-c", "user.name=op", "-c", "user.email=op@x", "commit", "-qm", "rules")
	git(t, c, "push", "-q", "origin", "HEAD:main")
	p.turn("a1")
	if out, isErr := p.sharedTool("a2", "team", `{"command":"str_replace","path":"/memories/rules.md","old_str":"be kind","new_str":"anything goes"}`); !isErr || !strings.Contains(out, "read-only") {
		t.Fatalf("a2's write to a read-only shared block: %v %s", isErr, out)
	}

	tr = p.turn("a2")
	if tr.Outcome == "failed" {
		t.Fatalf("turn: %+v", tr)
	}
	bare := srv.SharedRepoDir("team")
	authors := git(t, bare, "log", "--format=%an %s", "main")
	for _, want := range []string{"a1 memory: create notes/a1.md", "a2 memory: create notes/a2.md"} {
		if !strings.Contains(authors, want) {
			t.Fatalf("remote log lacks %q:\n%s", want, authors)
		}
	}
	if all := git(t, bare, "log", "--all", "--format=%an %s"); strings.Contains(all, "a3") {
		t.Fatalf("a denied write reached a branch:\n%s", all)
	}
	if got := git(t, bare, "show", "main:rules.md"); !strings.Contains(got, "be kind") {
		t.Fatalf("rules.md on the remote: %q", got)
	}
	git(t, bare, "fsck", "--strict")
	// One clone: the agents' folders hold no repository of team.
	for _, id := range []string{"a1", "a2", "a3"} {
		if _, err := os.Stat(filepath.Join(home, "agents", id, "shared", "team", ".git")); err == nil {
			t.Fatalf("%s has a clone of its own", id)
		}
	}
	var ctx struct {
		Text string `json:"text"`
	}
	if code, _ := p.get("/v1/agents/a3/context", &ctx); code != 200 || !strings.Contains(ctx.Text, `<shared_memory name="team" write="deny">`) || !strings.Contains(ctx.Text, "notes/") {
		t.Fatalf("a3's context: %d\n%s", code, ctx.Text)
	}
	if i, j := strings.Index(ctx.Text, "<memory_blocks>"), strings.Index(ctx.Text, "<shared_memory"); i < 0 || j < i {
		t.Fatalf("the shared memory is not after the agent's own:\n%s", ctx.Text)
	}
}

// TestShared_ProposeOnBranchesOnly: an agent attached with write: propose
// writes through its tool; the answer says it is a proposal, the shared
// main never gets it (locally or on the remote), the remote has it on
// proposals/<agent>/..., by that agent, on top of main; the listing shows
// the proposal to the operator, who merges it with plain git; a proposal
// that changes a read-only block is refused like a write.
func TestShared_ProposeOnBranchesOnly(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "w1", "--agent", "w2")
	for id, w := range map[string]string{"w1": "allow", "w2": "propose"} {
		if code, err := p.adminCall("PUT", "/v1/agents/"+id+"/shared/team", `{"write":"`+w+`"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach %s: %d %v", id, code, err)
		}
	}
	if out, isErr := p.sharedTool("w1", "team", `{"command":"create","path":"/memories/plan.md","file_text":"step one\n"}`); isErr {
		t.Fatal(out)
	}
	p.turn("w1")
	out, isErr := p.sharedTool("w2", "team", `{"command":"str_replace","path":"/memories/plan.md","old_str":"step one","new_str":"step one\nstep two"}`)
	if isErr || !strings.Contains(out, "proposal") || !strings.Contains(out, "proposals/w2/") {
		t.Fatalf("w2's proposal: %v %s", isErr, out)
	}
	if out, isErr := p.sharedTool("w2", "team", `{"command":"create","path":"/memories/new.md","file_text":"idea\n"}`); isErr {
		t.Fatal(out)
	}
	p.turn("w2")
	bare := srv.SharedRepoDir("team")
	if got := git(t, bare, "show", "main:plan.md"); got != "step one" {
		t.Fatalf("main's plan.md = %q: a proposal reached main", got)
	}
	if _, err := gitTry(bare, "cat-file", "-e", "main:new.md"); err == nil {
		t.Fatal("a proposed new file reached main")
	}
	if data, _ := os.ReadFile(filepath.Join(home, "shared", "team", "memory", "plan.md")); string(data) != "step one\n" {
		t.Fatalf("the shared clone holds %q: a proposal reached the shared work tree", data)
	}
	branches := strings.Fields(git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposals/"))
	if len(branches) != 2 {
		t.Fatalf("proposal branches: %v, want 2", branches)
	}
	for _, b := range branches {
		if !strings.HasPrefix(b, "proposals/w2/") || git(t, bare, "log", "-1", "--format=%an", b) != "w2" || git(t, bare, "rev-parse", b+"^") != git(t, bare, "rev-parse", "main") {
			t.Fatalf("branch %s: want proposals/w2/..., by w2, on top of main", b)
		}
	}
	var listed sharedAnswer
	var raw map[string]any
	p.get("/v1/agents/w2/shared", &raw)
	if code, _ := p.get("/v1/agents/w2/shared", &listed); code != 200 || !strings.Contains(toJSON(raw), "proposals/w2/") {
		t.Fatalf("w2's listing does not show its proposals: %s", toJSON(raw))
	}
	// The agent is told at its next turn; the listing shows them pending.
	var rem map[string]any
	if code, _ := p.get("/v1/agents/w2/reminders", &rem); code != 200 || !strings.Contains(toJSON(rem), `"kind":"proposal"`) || !strings.Contains(toJSON(rem), "proposals/w2/") {
		t.Fatalf("w2's reminders lack its proposals: %s", toJSON(rem))
	}
	if !strings.Contains(toJSON(raw), "pending_proposals") {
		t.Fatalf("w2's listing shows no pending proposals: %s", toJSON(raw))
	}
	// The operator merges with plain git; the agents see it at the next turn.
	peer := filepath.Join(t.TempDir(), "c")
	git(t, filepath.Dir(peer), "clone", "-q", strings.Replace(srv.SharedURL("op", "team"), "http://", "http://memfsd:"+token+"@", 1), peer)
	for _, b := range branches {
		git(t, peer, "-c", "user.name=op", "-c", "user.email=op@x", "merge", "-q", "--no-edit", "origin/"+b)
	}
	git(t, peer, "push", "-q", "origin", "HEAD:main")
	p.turn("w1")
	waitFor(t, 10*time.Second, "merged proposal in the shared clone", func() bool {
		data, _ := os.ReadFile(filepath.Join(home, "shared", "team", "memory", "plan.md"))
		return string(data) == "step one\nstep two\n"
	})
	waitFor(t, 10*time.Second, "no pending proposal once merged", func() bool {
		var rem, list map[string]any
		p.get("/v1/agents/w2/reminders", &rem)
		p.get("/v1/agents/w2/shared", &list)
		return !strings.Contains(toJSON(rem), `"kind":"proposal"`) && !strings.Contains(toJSON(list), "pending_proposals")
	})
	git(t, bare, "fsck", "--strict")
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestShared_TwoDaemonsFaultsConverge: three agents of one daemon and one
// of a second daemon (its own home) write to one shared repository through
// their tools and, with the shell, into their views at once, turning as
// they go, while the server answers bursts of 503 and the two daemons'
// pushes race; beside them an agent with write: propose (daemon A) and
// one with write: deny (daemon B) write into their views: nothing allowed
// is lost (every file on the remote's main, each commit by its agent),
// the proposals are on proposals/<agent>/ branches only and the denied
// writes nowhere, both shared clones converge on the remote's tip, and
// git fsck --strict is clean.
func TestShared_TwoDaemonsFaultsConverge(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	homeA, homeB := t.TempDir(), t.TempDir()
	pa := startDaemon(t, srv, homeA, "--agent", "x1", "--agent", "x2", "--agent", "x3", "--agent", "xp")
	pb := startDaemon(t, srv, homeB, "--agent", "y1", "--agent", "yd")
	procs := map[string]*proc{"x1": pa, "x2": pa, "x3": pa, "y1": pb}
	homes := map[string]string{"x1": homeA, "x2": homeA, "x3": homeA, "xp": homeA, "y1": homeB, "yd": homeB}
	// The repository is created with a first commit (letta-code's
	// shared-memory create): the two daemons' first writes then share a
	// history (on an empty one, the second is an unrelated-history restore
	// by memfsd's own commits).
	seed := filepath.Join(t.TempDir(), "seed")
	git(t, filepath.Dir(seed), "clone", "-q", strings.Replace(srv.SharedURL("op", "team"), "http://", "http://memfsd:"+token+"@", 1), seed)
	os.WriteFile(filepath.Join(seed, "README.md"), []byte("team memory\n"), 0o644)
	git(t, seed, "add", ".")
	git(t, seed, "-c", "user.name=op", "-c", "user.email=op@x", "commit", "-qm", "create")
	git(t, seed, "push", "-q", "origin", "HEAD:main")
	for id, p := range procs {
		// Each agent's own URL of the repository (letta-code's layout):
		// the server serves one repository behind them.
		if code, err := p.adminCall("PUT", "/v1/agents/"+id+"/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach %s: %d %v", id, code, err)
		}
	}
	for id, w := range map[string]string{"xp": "propose", "yd": "deny"} {
		p := pa
		if id == "yd" {
			p = pb
		}
		if code, err := p.adminCall("PUT", "/v1/agents/"+id+"/shared/team", `{"write":"`+w+`"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach %s: %d %v", id, code, err)
		}
	}
	viewOf := func(id string) string { return filepath.Join(homes[id], "agents", id, "shared", "team") }
	for id := range homes {
		waitFor(t, 30*time.Second, id+"'s view", func() bool {
			_, err := os.Stat(filepath.Join(viewOf(id), "README.md"))
			return err == nil
		})
	}
	const n = 8
	var wg sync.WaitGroup
	for id, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if i%3 == 1 {
					srv.FailNext("git-receive-pack", 2, 503)
				}
				body := fmt.Sprintf(`{"command":"create","path":"/memories/%s/%d.md","file_text":"%s wrote %d\n"}`, id, i, id, i)
				var res struct {
					Content string `json:"content"`
					IsError bool   `json:"is_error"`
				}
				if code, err := p.call("POST", "/v1/agents/"+id+"/memory?shared=team", body, &res); err != nil || code != 200 || res.IsError {
					t.Errorf("%s write %d: %d %v %s", id, i, code, err, res.Content)
					return
				}
				// And a file written straight into the view by the shell.
				if err := shellTry(viewOf(id), fmt.Sprintf(`mkdir -p %s && printf '%s wrote view %d\n' > %s/v%d.md`, id, id, i, id, i)); err != nil {
					t.Errorf("%s's view write %d: %v", id, i, err)
					return
				}
				if i%2 == 0 {
					p.call("POST", "/v1/agents/"+id+"/turn?wait=20s", "", nil)
				}
			}
		}()
	}
	for _, id := range []string{"xp", "yd"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if err := shellTry(viewOf(id), fmt.Sprintf(`mkdir -p %s && printf '%s wrote view %d\n' > %s/v%d.md; echo "%s %d" >> README.md`, id, id, i, id, i, id, i)); err != nil {
					t.Errorf("%s's view write %d: %v", id, i, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	srv.ClearFaults()
	bare := srv.SharedRepoDir("team")
	waitFor(t, 60*time.Second, "both shared clones converged on the remote", func() bool {
		pa.turn("x1")
		pb.turn("y1")
		remote, err := gitTry(bare, "rev-parse", "main")
		if err != nil {
			return false
		}
		if files, _ := gitTry(bare, "ls-tree", "-r", "--name-only", "main"); len(strings.Fields(files)) < 8*n+1 {
			return false // view files still on their way
		}
		a, _ := gitTry(filepath.Join(homeA, "shared", "team", "memory"), "rev-parse", "HEAD")
		b, _ := gitTry(filepath.Join(homeB, "shared", "team", "memory"), "rev-parse", "HEAD")
		return a == remote && b == remote
	})
	files := strings.Fields(git(t, bare, "ls-tree", "-r", "--name-only", "main"))
	if len(files) != 8*n+1 {
		t.Fatalf("main has %d files, want %d: %v", len(files), 8*n+1, files)
	}
	for id := range procs {
		for i := range n {
			for _, f := range []struct{ path, text string }{
				{fmt.Sprintf("%s/%d.md", id, i), fmt.Sprintf("%s wrote %d", id, i)},
				{fmt.Sprintf("%s/v%d.md", id, i), fmt.Sprintf("%s wrote view %d", id, i)},
			} {
				if got := git(t, bare, "show", "main:"+f.path); got != f.text {
					t.Fatalf("%s = %q", f.path, got)
				}
				if by := git(t, bare, "log", "-1", "--format=%an", "main", "--", f.path); by != id {
					t.Fatalf("%s committed by %q", f.path, by)
				}
			}
		}
	}
	// Proposals on proposals/xp/ only; denied writes nowhere.
	if log := git(t, bare, "log", "--format=%an", "main"); strings.Contains(log, "xp") || strings.Contains(log, "yd") {
		t.Fatalf("a propose or deny write reached main:\n%s", log)
	}
	if got := git(t, bare, "show", "main:README.md"); got != "team memory" {
		t.Fatalf("main's README.md = %q", got)
	}
	waitFor(t, 30*time.Second, "xp's proposals pushed", func() bool {
		pa.turn("x1")
		refs, _ := gitTry(bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposals/xp/")
		var got []string
		for _, b := range strings.Fields(refs) {
			names, _ := gitTry(bare, "show", "--format=", "--name-only", b)
			got = append(got, strings.Fields(names)...)
		}
		return slices.Contains(got, fmt.Sprintf("xp/v%d.md", n-1))
	})
	for _, b := range strings.Fields(git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/")) {
		if b != "main" && !strings.HasPrefix(b, "proposals/xp/") {
			t.Fatalf("unexpected branch %s on the remote", b)
		}
		if b != "main" && git(t, bare, "log", "-1", "--format=%an", b) != "xp" {
			t.Fatalf("branch %s not by xp", b)
		}
	}
	if all := git(t, bare, "log", "--all", "--format=%an %s"); strings.Contains(all, "yd") {
		t.Fatalf("a denied write reached a branch:\n%s", all)
	}
	if srv.Faulted() == 0 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
	git(t, bare, "fsck", "--strict")
	for _, h := range []string{homeA, homeB} {
		git(t, filepath.Join(h, "shared", "team", "memory"), "fsck", "--strict")
	}
}
