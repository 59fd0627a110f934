package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The scenarios that matter, against a real self-hosted git server (Gitea,
// started by scripts/e2e-gitea.sh, which sets MEMFSD_GITEA_URL,
// MEMFSD_GITEA_USER and MEMFSD_GITEA_TOKEN). Skipped without it.

type gitea struct {
	url, user, token string
}

func needGitea(t *testing.T) gitea {
	g := gitea{os.Getenv("MEMFSD_GITEA_URL"), os.Getenv("MEMFSD_GITEA_USER"), os.Getenv("MEMFSD_GITEA_TOKEN")}
	if g.url == "" {
		t.Skip("no Gitea: run scripts/e2e-gitea.sh")
	}
	return g
}

func (g gitea) template() string { return g.url + "/" + g.user + "/{agent}.git" }

// env is the environment of memfsd against this Gitea.
func (g gitea) env(token string) []string {
	return append(os.Environ(), "MEMFSD_REMOTE_TEMPLATE="+g.template(), "MEMFSD_USERNAME="+g.user,
		"MEMFSD_TOKEN="+token, "MEMFSD_CREATE_REMOTE=true")
}

// cli runs memfsd against Gitea.
func (g gitea) cli(t *testing.T, token string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = g.env(token)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// peer clones the agent's repository from Gitea with the git CLI.
func (g gitea) peer(t *testing.T, id string) string {
	dir := filepath.Join(t.TempDir(), "peer")
	u := strings.Replace(g.url, "://", "://"+g.user+":"+g.token+"@", 1) + "/" + g.user + "/" + id + ".git"
	git(t, filepath.Dir(dir), "clone", "-q", u, dir)
	return dir
}

// daemon runs memfsd against Gitea (no test server: launchDaemon's
// --base-url is not used).
func (g gitea) daemon(t *testing.T, home string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, home: home, logs: &syncBuffer{}}
	p.cmd = exec.Command(binPath, append([]string{"run", "--home", home, "--debounce", "50ms"}, args...)...)
	p.cmd.Env = g.env(g.token)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.api = unixClient(filepath.Join(home, "memfsd.sock"))
	p.admin = unixClient(filepath.Join(home, "admin.sock"))
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", p.logs.String())
		}
	})
	p.waitHealthy(120 * time.Second)
	return p
}

func TestGitea(t *testing.T) {
	t.Parallel()
	g := needGitea(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1_000_000_000)

	t.Run("FirstRunOnAnEmptyHost", func(t *testing.T) {
		id := "first-" + run
		home := t.TempDir()
		if code, out := g.cli(t, g.token, "sync", "--agent", id, "--home", home); code != 0 {
			t.Fatalf("first sync: %d %s", code, out)
		}
		peer := g.peer(t, id)
		if got := git(t, peer, "log", "--format=%s"); got != "memfsd: initialise memory with default blocks" {
			t.Fatalf("created repository's log = %q", got)
		}
	})

	t.Run("WriteTurnPush", func(t *testing.T) {
		id := "turn-" + run
		home := t.TempDir()
		p := g.daemon(t, home, "--agent", id)
		waitFor(t, 60*time.Second, "start-up sync", func() bool { return p.status(id).LastSyncAt != nil })
		os.WriteFile(filepath.Join(memDir(home, id), "note.md"), []byte("kept in gitea\n"), 0o600)
		waitFor(t, 10*time.Second, "committed", func() bool { return len(p.status(id).Dirty) == 0 && p.status(id).Ahead == 1 })
		if tr := p.turn(id); tr.Outcome != "pushed" {
			t.Fatalf("turn = %+v", tr)
		}
		if got := git(t, g.peer(t, id), "show", "HEAD:note.md"); got != "kept in gitea" {
			t.Fatalf("note.md on Gitea = %q", got)
		}
	})

	t.Run("TwoDaemonsDiverge", func(t *testing.T) {
		id := "two-" + run
		homes := []string{t.TempDir(), t.TempDir()}
		var ps []*proc
		for _, h := range homes {
			p := g.daemon(t, h, "--agent", id)
			waitFor(t, 60*time.Second, "start-up sync", func() bool { return p.status(id).LastSyncAt != nil })
			ps = append(ps, p)
		}
		for i, p := range ps {
			os.WriteFile(filepath.Join(memDir(homes[i], id), "shared.md"), []byte(fmt.Sprintf("line from daemon %d\n", i)), 0o600)
			waitFor(t, 10*time.Second, "committed", func() bool { return len(p.status(id).Dirty) == 0 })
		}
		ps[0].turn(id)
		tr := ps[1].turn(id)
		if tr.Outcome != "conflict" && tr.Outcome != "pushed" {
			t.Fatalf("second daemon's turn = %+v", tr)
		}
		ps[0].turn(id)
		tree := git(t, g.peer(t, id), "ls-tree", "--name-only", "HEAD")
		data := git(t, g.peer(t, id), "show", "HEAD:shared.md")
		if !strings.Contains(tree, "shared.conflict-") && !(strings.Contains(data, "daemon 0") && strings.Contains(data, "daemon 1")) {
			t.Fatalf("both sides not kept on Gitea: tree\n%s\nshared.md %q", tree, data)
		}
	})

	t.Run("WrongTokenIsAuth", func(t *testing.T) {
		home := t.TempDir()
		code, out := g.cli(t, "not-the-token", "sync", "--agent", "auth-"+run, "--home", home)
		if code != 1 || !strings.Contains(out, "class=auth") || strings.Contains(out, "not-the-token") {
			t.Fatalf("wrong token: %d %s", code, out)
		}
	})

	t.Run("HundredAgents", func(t *testing.T) {
		home := t.TempDir()
		var args, ids []string
		for i := 0; i < 100; i++ {
			id := fmt.Sprintf("many-%s-%03d", run, i)
			ids = append(ids, id)
			args = append(args, "--agent", id)
		}
		start := time.Now()
		p := g.daemon(t, home, args...)
		t.Logf("100 agents created and cloned on Gitea, healthy after %s", time.Since(start))
		last := ids[len(ids)-1]
		os.WriteFile(filepath.Join(memDir(home, last), "hello.md"), []byte("hi\n"), 0o600)
		waitFor(t, 120*time.Second, "last agent synced and committed", func() bool {
			st := p.status(last)
			return st.LastSyncAt != nil && len(st.Dirty) == 0
		})
		// The start-up sync may have pushed the write already: clean or
		// pushed, the write must be on Gitea.
		if tr := p.turn(last); tr.Outcome != "pushed" && tr.Outcome != "clean" {
			t.Fatalf("turn = %+v", tr)
		}
		if got := git(t, g.peer(t, last), "show", "HEAD:hello.md"); got != "hi" {
			t.Fatalf("hello.md on Gitea = %q", got)
		}
		if err := p.stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	})
}
