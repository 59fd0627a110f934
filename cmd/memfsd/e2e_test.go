package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

func TestRun_WriteCommitsAndTurnPushes(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "w1")
	dir := memDir(home, "w1")
	before := commitCount(t, dir, "HEAD")
	os.WriteFile(filepath.Join(dir, "note.md"), []byte("hello\n"), 0o600)
	waitFor(t, 10*time.Second, "the write committed", func() bool { return commitCount(t, dir, "HEAD") == before+1 })
	if got := git(t, dir, "log", "-1", "--format=%s|%an"); got != "memory: create note.md|w1" {
		t.Fatalf("commit = %q", got)
	}
	tr := p.turn("w1")
	if tr.Outcome != "pushed" || tr.Pushed != 1 || tr.Status.State != "clean" || tr.Status.Head != tr.Status.RemoteHead {
		t.Fatalf("turn = %+v", tr)
	}
	if got := git(t, srv.RepoDir("w1"), "show", "main:note.md"); got != "hello" {
		t.Fatalf("remote note.md = %q", got)
	}
	if tr := p.turn("w1"); tr.Outcome != "clean" || tr.Pushed != 0 {
		t.Fatalf("second turn = %+v", tr)
	}
	git(t, dir, "fsck", "--strict")
}

func TestRun_ThousandFilesThousandCommits(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "burst")
	dir := memDir(home, "burst")
	before := commitCount(t, dir, "HEAD")
	// A thousand in a soak; in the suite 200 files still settle as a burst
	// of one commit each.
	n := soak.Int(200, 1000)
	// Each file arrives whole (written beside the folder, renamed in), so
	// each is one settled write: a file created empty and filled a moment
	// later can settle twice on a loaded machine, rightly, as two commits.
	stage := t.TempDir()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("f%04d.md", i)
		os.WriteFile(filepath.Join(stage, name), []byte(fmt.Sprintf("file %d\n", i)), 0o600)
		if err := os.Rename(filepath.Join(stage, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 120*time.Second, fmt.Sprint(n, " commits"), func() bool { return commitCount(t, dir, "HEAD") >= before+n })
	if c := commitCount(t, dir, "HEAD"); c != before+n {
		t.Fatalf("%d commits, want %d", c-before, n)
	}
	files := git(t, dir, "ls-tree", "--name-only", "HEAD")
	if got := strings.Count(files, "f0"); got != n {
		t.Fatalf("HEAD has %d of the files", got)
	}
	p.turn("burst")
	if c := commitCount(t, srv.RepoDir("burst"), "main"); c != before+n {
		t.Fatalf("remote has %d commits", c)
	}
	git(t, srv.RepoDir("burst"), "fsck", "--strict")
}

func TestRun_TwoTurnsAtOnceOnePush(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "tt")
	dir := memDir(home, "tt")
	before := commitCount(t, dir, "HEAD")
	os.WriteFile(filepath.Join(dir, "x.md"), []byte("x\n"), 0o600)
	waitFor(t, 10*time.Second, "commit", func() bool { return commitCount(t, dir, "HEAD") == before+1 })
	// Slow the pack upload down so both turns overlap the push.
	srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/tt/state.git/git-receive-pack", Count: 1, Delay: 300 * time.Millisecond})
	postsBefore := srv.RequestsMatching("POST /v1/git/tt/state.git/git-receive-pack")
	var wg sync.WaitGroup
	results := make([]turnResult, 2)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = p.turn("tt") }()
	}
	wg.Wait()
	// Two turns that arrive before the sync starts share it, and both
	// answer its result: count that one push once.
	pushed := results[0].Pushed + results[1].Pushed
	a, b := results[0].Status.LastSyncAt, results[1].Status.LastSyncAt
	if a != nil && b != nil && a.Equal(*b) && results[0].Pushed == results[1].Pushed {
		pushed = results[0].Pushed
	}
	if pushed != 1 {
		t.Fatalf("turns pushed %d commits in total, want 1: %+v", pushed, results)
	}
	if posts := srv.RequestsMatching("POST /v1/git/tt/state.git/git-receive-pack") - postsBefore; posts != 1 {
		t.Fatalf("%d pack uploads for two turns, want 1", posts)
	}
	for _, r := range results {
		if r.Outcome != "pushed" && r.Outcome != "clean" {
			t.Fatalf("turn outcome %+v", r)
		}
	}
}

func TestRun_SIGTERMPushesPendingWrites(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "term", "--debounce", "10s")
	dir := memDir(home, "term")
	os.WriteFile(filepath.Join(dir, "last-words.md"), []byte("pushed at exit\n"), 0o600)
	// The debounce is 10 s: the write is pending, not committed, when the
	// signal arrives. Interlock on the watcher having seen it via status.
	waitFor(t, 10*time.Second, "write seen", func() bool { return len(p.status("term").Dirty) == 1 })
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if got := git(t, srv.RepoDir("term"), "show", "main:last-words.md"); got != "pushed at exit" {
		t.Fatalf("remote = %q", got)
	}
}

func TestRun_KillNineLosesNothing(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "k9")
	dir := memDir(home, "k9")
	// Burst of writes; kill -9 in the middle of it.
	var want []string
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("k%03d.md", i)
		want = append(want, name)
		os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o600)
		if i == 150 {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	}
	// Restart; a push in progress gets killed too.
	p = startDaemon(t, srv, home, "--agent", "k9")
	want = append(want, "during-push.md")
	os.WriteFile(filepath.Join(dir, "during-push.md"), []byte("x\n"), 0o600)
	// The restarted daemon commits the burst's 149 uncommitted files and
	// this one, in whatever order they settle: wait for this one in HEAD,
	// not for it to be the last commit.
	waitFor(t, 60*time.Second, "during-push.md committed", func() bool {
		_, err := gitTry(dir, "cat-file", "-e", "HEAD:during-push.md")
		return err == nil
	})
	slow := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/k9/state.git/git-receive-pack", Count: 1, Delay: 2 * time.Second})
	go p.call("POST", "/v1/agents/k9/turn?wait=60s", "", nil)
	waitFor(t, 20*time.Second, "push in flight", func() bool { return slow.Hits.Load() == 1 })
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p = startDaemon(t, srv, home, "--agent", "k9")
	tr := p.turn("k9")
	if tr.Outcome == "failed" || tr.Status.State != "clean" {
		t.Fatalf("turn after restarts = %+v", tr)
	}
	bare := srv.RepoDir("k9")
	tree := git(t, bare, "ls-tree", "--name-only", "main")
	for _, name := range want {
		if !strings.Contains(tree, name) {
			t.Errorf("%s lost", name)
		}
	}
	git(t, bare, "fsck", "--strict")
	waitRepackIdle(t, dir)
	git(t, dir, "fsck", "--strict")
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status: %s", st)
	}
}

func TestRun_HundredAgents(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	var args []string
	var ids []string
	for i := 0; i < soak.Int(25, 100); i++ {
		id := fmt.Sprintf("agent-%03d", i)
		ids = append(ids, id)
		args = append(args, "--agent", id)
	}
	p := startDaemon(t, srv, home, args...)
	for _, id := range ids {
		os.WriteFile(filepath.Join(memDir(home, id), "hello.md"), []byte(id+"\n"), 0o600)
	}
	for _, id := range ids {
		waitFor(t, 60*time.Second, id+" committed", func() bool {
			return strings.HasPrefix(git(t, memDir(home, id), "log", "-1", "--format=%s"), "memory: create hello.md")
		})
	}
	if code, _ := p.get("/healthz", nil); code != 200 {
		t.Fatalf("healthz %d", code)
	}
}

func TestRun_MassDeleteHeld(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "md")
	dir := memDir(home, "md")
	for i := 0; i < 30; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%02d.md", i)), []byte("x\n"), 0o600)
	}
	before := commitCount(t, dir, "HEAD")
	waitFor(t, 30*time.Second, "30 commits", func() bool { return len(p.status("md").Dirty) == 0 && commitCount(t, dir, "HEAD") >= 31 })
	p.turn("md")
	before = commitCount(t, srv.RepoDir("md"), "main")
	// rm -rf of the work tree's contents (not .git).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != ".git" {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	waitFor(t, 10*time.Second, "state error", func() bool { return p.status("md").State == "error" })
	tr := p.turn("md")
	if n := commitCount(t, srv.RepoDir("md"), "main"); n != before {
		t.Fatalf("remote moved from %d to %d commits after rm -rf", before, n)
	}
	if tr.Status.State != "error" || len(tr.Status.HeldDeletes) < 30 {
		t.Fatalf("after rm -rf: %+v", tr.Status)
	}
	if git(t, srv.RepoDir("md"), "ls-tree", "--name-only", "main", "m00.md") != "m00.md" {
		t.Fatal("m00.md deleted on the remote")
	}
}

func TestRun_PersonRevertsWhileDaemonRuns(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "rv")
	dir := memDir(home, "rv")
	os.WriteFile(filepath.Join(dir, "wrong.md"), []byte("a bad memory\n"), 0o600)
	waitFor(t, 10*time.Second, "commit", func() bool { return git(t, dir, "log", "-1", "--format=%s") == "memory: create wrong.md" })
	p.turn("rv")
	git(t, dir, "revert", "--no-edit", "HEAD")
	tr := p.turn("rv")
	if tr.Outcome != "pushed" || tr.Status.State != "clean" {
		t.Fatalf("turn after revert = %+v", tr)
	}
	bare := srv.RepoDir("rv")
	if got := git(t, bare, "log", "-1", "--format=%s", "main"); got != `Revert "memory: create wrong.md"` {
		t.Fatalf("remote head = %q", got)
	}
	if out := git(t, bare, "ls-tree", "--name-only", "main", "wrong.md"); out != "" {
		t.Fatal("wrong.md still on the remote")
	}
}

func TestRun_EditorRenameIsOneWrite(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "ed")
	dir := memDir(home, "ed")
	before := commitCount(t, dir, "HEAD")
	tmp := filepath.Join(dir, ".note.md.swp")
	os.WriteFile(tmp, []byte("drafted in an editor\n"), 0o600)
	os.Rename(tmp, filepath.Join(dir, "note.md"))
	waitFor(t, 10*time.Second, "commit", func() bool { return commitCount(t, dir, "HEAD") > before })
	p.turn("ed") // flushes anything still pending
	if n := commitCount(t, dir, "HEAD") - before; n != 1 {
		t.Fatalf("%d commits for one editor save, want 1: %s", n, git(t, dir, "log", "--format=%s", "-3"))
	}
	if got := git(t, dir, "log", "-1", "--format=%s"); got != "memory: create note.md" {
		t.Fatalf("commit = %q", got)
	}
	if files := git(t, dir, "ls-tree", "--name-only", "HEAD"); strings.Contains(files, "swp") {
		t.Fatalf("temp file committed: %s", files)
	}
}

// TestRun_WritesRepackWithoutTurns: memory writes alone (no turn, no push)
// get their loose objects packed in the background, every commit kept.
func TestRun_WritesRepackWithoutTurns(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "rp", "--log-level", "warn")
	dir := memDir(home, "rp")
	before := commitCount(t, dir, "HEAD")
	const n = 300
	for i := 0; i < n; i++ {
		var res struct {
			IsError bool `json:"is_error"`
		}
		body := fmt.Sprintf(`{"command":"create","path":"/memories/notes/d%d/n%03d.md","file_text":"note %d\n"}`, i%7, i, i)
		if code, err := p.call("POST", "/v1/agents/rp/memory", body, &res); err != nil || code != 200 || res.IsError {
			t.Fatalf("write %d: %d %v %+v", i, code, err, res)
		}
	}
	objects := func() (loose, packed int) {
		for _, l := range strings.Split(git(t, dir, "count-objects", "-v"), "\n") {
			if v, ok := strings.CutPrefix(l, "count: "); ok {
				fmt.Sscan(v, &loose)
			}
			if v, ok := strings.CutPrefix(l, "in-pack: "); ok {
				fmt.Sscan(v, &packed)
			}
		}
		return
	}
	waitFor(t, 90*time.Second, "the loose objects packed", func() bool { l, _ := objects(); return l < 512 })
	waitRepackIdle(t, dir)
	if l, pk := objects(); pk < n*3 {
		t.Fatalf("%d objects packed, %d loose, after %d writes", pk, l, n)
	}
	if c := commitCount(t, dir, "HEAD"); c != before+n {
		t.Fatalf("%d commits, want %d", c-before, n)
	}
	git(t, dir, "fsck", "--strict")
}
