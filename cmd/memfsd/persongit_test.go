package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/testgit"
)

// A person's git in the agent's folder while the daemon runs: a commit or
// revert waiting on its editor is never raced by memfsd's commits (which
// would move HEAD under it: "cannot lock ref 'HEAD'"); the agent's writes
// made meanwhile land after the person's commit.

// personStatus is the part of status these tests read.
type personStatus struct {
	Dirty     []string `json:"dirty"`
	State     string   `json:"state"`
	PersonGit *struct {
		Signs   []string `json:"signs"`
		Staged  []string `json:"staged"`
		Holding bool     `json:"holding"`
		Message string   `json:"message"`
	} `json:"person_git_in_progress"`
}

func (p *proc) personStatus(id string) personStatus {
	p.t.Helper()
	var st personStatus
	if code, err := p.get("/v1/agents/"+id+"/status", &st); err != nil || code != 200 {
		p.t.Fatalf("status %s: %d %v", id, code, err)
	}
	return st
}

// slowEditor is a GIT_EDITOR that says it is open (<script>.open), writes
// $PERSON_MSG as the message when set, and waits for <script>.close.
func slowEditor(t *testing.T) (script string, open func(), close func()) {
	t.Helper()
	script = filepath.Join(t.TempDir(), "editor.sh")
	body := "#!/bin/sh\n" +
		"if [ -n \"$PERSON_MSG\" ]; then printf '%s\\n' \"$PERSON_MSG\" > \"$1\"; fi\n" +
		": > \"$0.open\"\n" +
		"while [ ! -e \"$0.close\" ]; do sleep 0.02; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	open = func() {
		waitFor(t, 10*time.Second, "the person's editor open", func() bool {
			_, err := os.Stat(script + ".open")
			return err == nil
		})
	}
	close = func() { os.WriteFile(script+".close", nil, 0o600) }
	return script, open, close
}

// personGit starts git in dir as the person, with editor; wait returns
// its output and error.
func personGit(t *testing.T, dir, editor, msg string, args ...string) (wait func() (string, error)) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(testgit.Env(), "GIT_EDITOR="+editor, "PERSON_MSG="+msg)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The editor outlives a killed git: Wait returns anyway.
	cmd.WaitDelay = 5 * time.Second
	t.Cleanup(func() {
		os.WriteFile(editor+".close", nil, 0o600)
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return func() (string, error) {
		err := cmd.Wait()
		return out.String(), err
	}
}

// stage stages content at rel as the person's `git add` would, before the
// file is in the folder (so the daemon cannot see an unstaged write of it
// first), then writes the file.
func stage(t *testing.T, dir, rel, content string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "blob")
	os.WriteFile(tmp, []byte(content), 0o600)
	blob := git(t, dir, "hash-object", "-w", tmp)
	git(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+rel)
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// agentWritesDuringHold has the agent write tool.md through the tool and
// direct.md straight into the folder while the person's editor is open,
// and waits until the daemon shows it holds them (or, without the wait,
// has already committed them: then the person's commit fails below).
func agentWritesDuringHold(t *testing.T, p *proc, id, dir, headBefore string) {
	t.Helper()
	var res struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	body := `{"command":"create","path":"/memories/tool.md","file_text":"from the tool\n"}`
	if code, err := p.call("POST", "/v1/agents/"+id+"/memory", body, &res); err != nil || code != 200 || res.IsError {
		t.Fatalf("tool write: %d %v %+v", code, err, res)
	}
	os.WriteFile(filepath.Join(dir, "direct.md"), []byte("written straight\n"), 0o600)
	waitFor(t, 10*time.Second, "the daemon holding the agent's writes (or committing them)", func() bool {
		if git(t, dir, "rev-parse", "HEAD") != headBefore {
			return true // raced: the person's commit will fail
		}
		st := p.personStatus(id)
		return st.PersonGit != nil && st.PersonGit.Holding && slices.Contains(st.Dirty, "direct.md")
	})
	if git(t, dir, "rev-parse", "HEAD") != headBefore {
		t.Logf("HEAD moved while the person's editor was open: %s", git(t, dir, "log", "--format=%an|%s", "-3"))
	}
	// A turn meanwhile says why it waits.
	var tr struct {
		Outcome string       `json:"outcome"`
		Status  personStatus `json:"status"`
	}
	if code, err := p.call("POST", "/v1/agents/"+id+"/turn?wait=5s", "", &tr); err != nil || code != 200 {
		t.Fatalf("turn: %d %v", code, err)
	}
	if tr.Outcome != "delayed" || tr.Status.PersonGit == nil || !tr.Status.PersonGit.Holding {
		t.Errorf("turn during the person's editor = %+v, want delayed with person_git_in_progress", tr)
	}
}

// refusedDuringHold: while the person's editor is open (git holding no
// index.lock), a tool write the tool's checks refuse is refused now, as
// at any other time, and undone, not answered "created" and held later.
func refusedDuringHold(t *testing.T, p *proc, id, dir string) {
	t.Helper()
	out, isErr := p.memory(id, `{"command":"create","path":"/memories/system/bad.md","file_text":"no front matter\n"}`)
	if !isErr || !strings.Contains(out, "missing frontmatter") {
		t.Fatalf("a write breaking the front-matter rules during the person's editor answered %q (error %v), want refused", out, isErr)
	}
	if _, err := os.Lstat(filepath.Join(dir, "system", "bad.md")); !os.IsNotExist(err) {
		t.Fatalf("the refused write was left in the folder (%v)", err)
	}
}

// checkAfterPerson waits for the agent's writes to land on top of the
// person's commit (subject want, by person), then checks the push, git
// status and fsck.
func checkAfterPerson(t *testing.T, p *proc, srv *gitserver.Server, id, dir, want string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the agent's writes committed after the person's", func() bool {
		files := git(t, dir, "ls-tree", "--name-only", "HEAD")
		return strings.Contains(files, "tool.md") && strings.Contains(files, "direct.md")
	})
	if want != "" { // else the caller checks the history
		log := strings.Split(git(t, dir, "log", "--format=%an|%s", "-3"), "\n")
		tool := slices.Contains(log, id+"|memory: create /memories/tool.md") || slices.Contains(log, id+"|memory: create tool.md")
		if len(log) != 3 || log[2] != "person|"+want || !tool || !slices.Contains(log, id+"|memory: create direct.md") {
			t.Fatalf("history = %q, want the agent's two writes on top of the person's %q", log, want)
		}
	}
	if got := git(t, dir, "show", "HEAD:tool.md"); got != "from the tool" {
		t.Fatalf("tool.md = %q", got)
	}
	if got := git(t, dir, "show", "HEAD:direct.md"); got != "written straight" {
		t.Fatalf("direct.md = %q", got)
	}
	waitFor(t, 10*time.Second, "the push", func() bool {
		tr := p.turn(id)
		return tr.Status.State == "clean" && tr.Status.Head == tr.Status.RemoteHead
	})
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after = %q", st)
	}
	if st := p.personStatus(id); st.PersonGit != nil {
		t.Fatalf("person_git_in_progress after the person's commit = %+v", st.PersonGit)
	}
	waitRepackIdle(t, dir)
	git(t, dir, "fsck", "--strict")
	git(t, srv.RepoDir(id), "fsck", "--strict")
}

// TestRun_PersonRevertEditWhileAgentWrites: `git revert --edit` of the
// commit that made facts.md, editor open while the agent writes through
// the tool and directly.
func TestRun_PersonRevertEditWhileAgentWrites(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "pr")
	dir := memDir(home, "pr")
	os.WriteFile(filepath.Join(dir, "facts.md"), []byte("a wrong fact\n"), 0o600)
	waitFor(t, 10*time.Second, "facts.md committed", func() bool {
		return git(t, dir, "log", "-1", "--format=%s") == "memory: create facts.md"
	})
	p.turn("pr")
	sha := git(t, dir, "rev-parse", "HEAD")
	editor, open, close := slowEditor(t)
	wait := personGit(t, dir, editor, "", "revert", "--edit", sha)
	open()
	agentWritesDuringHold(t, p, "pr", dir, sha)
	refusedDuringHold(t, p, "pr", dir)
	close()
	if out, err := wait(); err != nil {
		t.Fatalf("the person's git revert failed: %v\n%s", err, out)
	}
	checkAfterPerson(t, p, srv, "pr", dir, `Revert "memory: create facts.md"`)
	if out := git(t, dir, "ls-tree", "--name-only", "HEAD", "facts.md"); out != "" {
		t.Fatal("facts.md still in HEAD after the revert")
	}
}

// TestRun_PersonCommitWithEditorWhileAgentWrites: `git add` then `git
// commit` plain, with -a, and with paths, editor open while the agent
// writes through the tool and directly.
func TestRun_PersonCommitWithEditorWhileAgentWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"plain", []string{"commit"}},
		{"all", []string{"commit", "-a"}},
		{"paths", []string{"commit", "--", "person.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := gitserver.New(t, token)
			home := t.TempDir()
			id := "pc-" + tc.name
			p := startDaemon(t, srv, home, "--agent", id)
			dir := memDir(home, id)
			if tc.name != "plain" {
				// -a and paths commit a tracked file the person changed.
				os.WriteFile(filepath.Join(dir, "person.md"), []byte("first\n"), 0o600)
				waitFor(t, 10*time.Second, "person.md committed", func() bool {
					return git(t, dir, "log", "-1", "--format=%s") == "memory: create person.md"
				})
			}
			head := git(t, dir, "rev-parse", "HEAD")
			stage(t, dir, "person.md", "the person's note\n")
			editor, open, close := slowEditor(t)
			wait := personGit(t, dir, editor, "person: note", tc.args...)
			open()
			agentWritesDuringHold(t, p, id, dir, head)
			if tc.name == "plain" {
				refusedDuringHold(t, p, id, dir)
			}
			close()
			if out, err := wait(); err != nil {
				t.Fatalf("the person's git %s failed: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
			checkAfterPerson(t, p, srv, id, dir, "person: note")
			if got := git(t, dir, "show", "HEAD:person.md"); got != "the person's note" {
				t.Fatalf("person.md = %q", got)
			}
			if got := git(t, dir, "log", "-1", "--format=%an", "--", "person.md"); got != "person" {
				t.Fatalf("person.md last committed by %q", got)
			}
		})
	}
}

// TestRun_PersonLeavesRevertHeadBehind: a revert stopped half-way (its
// REVERT_HEAD and staged deletion left behind, as when the editor is
// killed) holds memfsd no longer than --person-git-wait; the staged
// deletion stays the person's (never committed as the agent's), and
// status says memfsd went on.
func TestRun_PersonLeavesRevertHeadBehind(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	const bound = 2 * time.Second
	p := startDaemon(t, srv, home, "--agent", "lb", "--person-git-wait", bound.String())
	dir := memDir(home, "lb")
	os.WriteFile(filepath.Join(dir, "facts.md"), []byte("a wrong fact\n"), 0o600)
	waitFor(t, 10*time.Second, "facts.md committed", func() bool {
		return git(t, dir, "log", "-1", "--format=%s") == "memory: create facts.md"
	})
	sha := git(t, dir, "rev-parse", "HEAD")
	git(t, dir, "revert", "--no-commit", sha)
	start := time.Now()
	os.WriteFile(filepath.Join(dir, "direct.md"), []byte("written straight\n"), 0o600)
	waitFor(t, 10*time.Second, "direct.md committed", func() bool {
		return strings.Contains(git(t, dir, "ls-tree", "--name-only", "HEAD"), "direct.md")
	})
	took := time.Since(start)
	if took > bound+5*time.Second {
		t.Fatalf("direct.md committed after %s, the bound is %s", took, bound)
	}
	if out := git(t, dir, "ls-tree", "--name-only", "HEAD", "facts.md"); out == "" {
		t.Fatalf("the person's staged deletion of facts.md was committed: %s", git(t, dir, "log", "--format=%an|%s", "-3"))
	}
	if got := git(t, dir, "log", "-1", "--format=%an|%s"); got != "lb|memory: create direct.md" {
		t.Fatalf("HEAD = %q", got)
	}
	st := p.personStatus("lb")
	if st.PersonGit == nil || st.PersonGit.Holding || !slices.Contains(st.PersonGit.Signs, "REVERT_HEAD") || !slices.Contains(st.PersonGit.Staged, "facts.md") {
		t.Fatalf("person_git_in_progress after the wait = %+v", st.PersonGit)
	}
	// Turns go on meanwhile.
	if tr := p.turn("lb"); tr.Outcome != "pushed" {
		t.Fatalf("turn after the wait = %+v", tr)
	}
	if out := git(t, srv.RepoDir("lb"), "ls-tree", "--name-only", "main", "facts.md"); out == "" {
		t.Fatal("facts.md deleted on the remote by memfsd")
	}
	// The person comes back and finishes the revert: their commit.
	if out, err := testgitTryEnv(dir, []string{"GIT_EDITOR=true"}, "revert", "--continue"); err != nil {
		t.Fatalf("revert --continue: %v\n%s", err, out)
	}
	if got := git(t, dir, "log", "-1", "--format=%an|%s"); got != `person|Revert "memory: create facts.md"` {
		t.Fatalf("HEAD = %q", got)
	}
	waitFor(t, 10*time.Second, "person_git_in_progress cleared", func() bool { return p.personStatus("lb").PersonGit == nil })
	if tr := p.turn("lb"); tr.Outcome != "pushed" || tr.Status.State != "clean" {
		t.Fatalf("turn after the person's revert = %+v", tr)
	}
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status = %q", st)
	}
	waitRepackIdle(t, dir)
	git(t, dir, "fsck", "--strict")
}

func testgitTryEnv(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(testgit.Env(), env...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestRun_PersonCommitAcrossDaemonRestart: the daemon restarts while the
// person's `git commit` has its editor open; the new daemon waits too, and
// the agent's writes from before and after the restart land on top of the
// person's commit.
func TestRun_PersonCommitAcrossDaemonRestart(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "prs")
	dir := memDir(home, "prs")
	head := git(t, dir, "rev-parse", "HEAD")
	stage(t, dir, "person.md", "the person's note\n")
	editor, open, close := slowEditor(t)
	wait := personGit(t, dir, editor, "person: note", "commit")
	open()
	agentWritesDuringHold(t, p, "prs", dir, head)
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("daemon stop: %v\n%s", err, p.logs.String())
	}
	// The start-up sync waits on the person: healthy, not yet synced.
	p = launchDaemon(t, srv, home, "--agent", "prs")
	p.waitHealthy(60 * time.Second)
	os.WriteFile(filepath.Join(dir, "after.md"), []byte("after the restart\n"), 0o600)
	waitFor(t, 10*time.Second, "the new daemon holding the agent's writes", func() bool {
		st := p.personStatus("prs")
		return st.PersonGit != nil && st.PersonGit.Holding && slices.Contains(st.Dirty, "after.md")
	})
	if got := git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved while the person's editor was open: %s", git(t, dir, "log", "--format=%an|%s", "-3"))
	}
	close()
	if out, err := wait(); err != nil {
		t.Fatalf("the person's git commit failed: %v\n%s", err, out)
	}
	waitFor(t, 10*time.Second, "after.md committed", func() bool {
		return strings.Contains(git(t, dir, "ls-tree", "--name-only", "HEAD"), "after.md")
	})
	log := git(t, dir, "log", "--format=%an|%s", head+"..HEAD")
	lines := strings.Split(log, "\n")
	if lines[len(lines)-1] != "person|person: note" || len(lines) != 4 {
		t.Fatalf("history since the start = %q, want the person's commit then the agent's three writes", lines)
	}
	checkAfterPerson(t, p, srv, "prs", dir, "")
}

// TestRun_PersonGitAcrossDaemonKill: the daemon is killed (SIGKILL, no
// clean-up) and started again while the person's `git revert --edit` or
// `git commit` (plain, -a, with paths) has its editor open, the agent
// having written through the tool and directly before the kill and
// directly after the restart: the person's commit lands with the
// person's author and message, the agent's three writes after it (on top,
// by the agent), nothing lost, git status clean, fsck clean.
func TestRun_PersonGitAcrossDaemonKill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"revert-edit", nil},
		{"commit-plain", []string{"commit"}},
		{"commit-all", []string{"commit", "-a"}},
		{"commit-paths", []string{"commit", "--", "person.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := gitserver.New(t, token)
			home := t.TempDir()
			id := "pk-" + tc.name
			p := startDaemon(t, srv, home, "--agent", id)
			dir := memDir(home, id)
			// The file the person reverts or changes, made by the agent.
			first := "facts.md"
			if tc.args != nil {
				first = "person.md"
			}
			if tc.name != "commit-plain" {
				os.WriteFile(filepath.Join(dir, first), []byte("first\n"), 0o600)
				waitFor(t, 10*time.Second, first+" committed", func() bool {
					return git(t, dir, "log", "-1", "--format=%s") == "memory: create "+first
				})
				p.turn(id)
			}
			head := git(t, dir, "rev-parse", "HEAD")
			editor, open, close := slowEditor(t)
			var wait func() (string, error)
			want := "person: note"
			if tc.args == nil {
				want = `Revert "memory: create facts.md"`
				wait = personGit(t, dir, editor, "", "revert", "--edit", head)
			} else {
				stage(t, dir, "person.md", "the person's note\n")
				wait = personGit(t, dir, editor, want, tc.args...)
			}
			open()
			agentWritesDuringHold(t, p, id, dir, head)
			if err := p.stop(syscall.SIGKILL); err == nil {
				t.Fatal("the killed daemon exited 0")
			}
			p = launchDaemon(t, srv, home, "--agent", id)
			p.waitHealthy(60 * time.Second)
			os.WriteFile(filepath.Join(dir, "after.md"), []byte("after the restart\n"), 0o600)
			waitFor(t, 10*time.Second, "the new daemon holding the agent's writes", func() bool {
				st := p.personStatus(id)
				return st.PersonGit != nil && st.PersonGit.Holding && slices.Contains(st.Dirty, "after.md")
			})
			if got := git(t, dir, "rev-parse", "HEAD"); got != head {
				t.Fatalf("HEAD moved while the person's editor was open: %s", git(t, dir, "log", "--format=%an|%s", "-3"))
			}
			close()
			if out, err := wait(); err != nil {
				t.Fatalf("the person's git failed: %v\n%s", err, out)
			}
			waitFor(t, 10*time.Second, "after.md committed", func() bool {
				return strings.Contains(git(t, dir, "ls-tree", "--name-only", "HEAD"), "after.md")
			})
			lines := strings.Split(git(t, dir, "log", "--format=%an|%s", head+"..HEAD"), "\n")
			if len(lines) != 4 || lines[3] != "person|"+want {
				t.Fatalf("history since the editor opened = %q, want the person's %q then the agent's three writes", lines, want)
			}
			for _, l := range lines[:3] {
				if !strings.HasPrefix(l, id+"|") {
					t.Fatalf("history since the editor opened = %q: %q is not the agent's", lines, l)
				}
			}
			checkAfterPerson(t, p, srv, id, dir, "")
			if got := git(t, dir, "show", "HEAD:after.md"); got != "after the restart" {
				t.Fatalf("after.md = %q", got)
			}
			if tc.args == nil {
				if out := git(t, dir, "ls-tree", "--name-only", "HEAD", "facts.md"); out != "" {
					t.Fatal("facts.md still in HEAD after the revert")
				}
			} else if got := git(t, dir, "show", "HEAD:person.md"); got != "the person's note" {
				t.Fatalf("person.md = %q", got)
			}
		})
	}
}
