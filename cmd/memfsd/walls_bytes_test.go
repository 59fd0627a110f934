package main_test

import (
	"io"
	"net/http"
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

// Walls, third pass (issue 38): every byte the agent controls is bounded
// before it is held.

// hasProblem reports whether id's status names path with cause.
func (p *proc) hasProblem(id, path, cause string) bool {
	return slices.Contains(p.writeProblems(id), writeProblem{Path: path, Cause: cause})
}

// A sparse 1 TB file in agent a's folder costs no disk. Before, the
// direct-write pipeline read it whole (the work tree allocated st_size up
// front) and the runtime died with "fatal error: out of memory", taking
// agent b with it; the start-up scan read it again. Now both files (one
// made by the shell's truncate, one by os.Truncate) are held as too_large
// without being read, b's writes reach its remote, the daemon's RSS stays
// small, and a restart (the start-up scan) holds them the same.
func TestWalls_SparseFileHeldTooLarge(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	args := []string{"--agent", "a", "--agent", "b"}
	p := startDaemon(t, srv, home, args...)
	dir := memDir(home, "a")
	if out, err := exec.Command("sh", "-c", "cd "+dir+" && : > shell.md && truncate -s 1T shell.md").CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.md"), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "go.md"), 1<<40); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fine.md"), []byte("a fine note\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "both sparse files held too_large", func() bool {
		return p.cmd.ProcessState == nil && p.hasProblem("a", "shell.md", "too_large") && p.hasProblem("a", "go.md", "too_large")
	})
	waitFor(t, 30*time.Second, "fine.md committed beside them", func() bool {
		_, err := gitTry(dir, "cat-file", "-e", "HEAD:fine.md")
		return err == nil
	})
	p.kickTurn(t, "a")
	p.writeAndPush(t, srv, "b", "b.md", "b goes on\n")
	p.answersInTime(t, "a", "b")
	rss := rssMiB(p.cmd.Process.Pid)
	t.Logf("daemon RSS %d MiB (peak %d) with two sparse 1 TB files", rss, peakRSSMiB(p.cmd.Process.Pid))
	if rss > 512 {
		t.Errorf("daemon RSS %d MiB with two sparse 1 TB files, want under 512", rss)
	}
	for _, name := range []string{"shell.md", "go.md"} {
		if _, err := gitTry(dir, "cat-file", "-e", "HEAD:"+name); err == nil {
			t.Errorf("%s was committed", name)
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() != 1<<40 {
			t.Errorf("%s not kept in the folder as it was: %v %v", name, fi, err)
		}
	}

	// The start-up scan of a fresh daemon over the same folder.
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p = startDaemon(t, srv, home, args...)
	waitFor(t, 30*time.Second, "both sparse files held too_large after a restart", func() bool {
		return p.cmd.ProcessState == nil && p.hasProblem("a", "shell.md", "too_large") && p.hasProblem("a", "go.md", "too_large")
	})
	p.writeAndPush(t, srv, "b", "b2.md", "b goes on after the restart\n")
	p.answersInTime(t, "a", "b")
	if rss := rssMiB(p.cmd.Process.Pid); rss > 512 {
		t.Errorf("daemon RSS %d MiB after the start-up scan, want under 512", rss)
	}
}

// getText GETs path on c and returns the status and the body.
func getText(t *testing.T, c *http.Client, path string) (int, string) {
	t.Helper()
	resp, err := c.Get("http://memfsd" + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// peakRSSMiB is the process's peak resident memory (VmHWM).
func peakRSSMiB(pid int) int { return procStatusMiB(pid, "VmHWM:") }

// No link is followed under an agent's .git (issue 38). a2's own git
// commits private.md (its objects loose); a1's shell replaces the fan-out
// folders of its .git/objects with links to a2's, then its objects/pack
// with a link to a2's pack folder. Before, a1's socket answered
// file?path=private.md&rev=<a2's commit> (and memory_show) with a2's
// file: objects were opened with O_NOFOLLOW, which guards only the last
// component, and the short-id lookup listed objects/XX through the link.
// Now every such read answers not found, never a2's bytes, by full id and
// by short id, on the API, a1's own socket and MCP; a1's status names the
// link; a2's own socket still shows its file.
func TestWalls_LinkedObjectsNeverReadAcross(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "a1", "--agent", "a2")
	a1Git, a2Dir := filepath.Join(memDir(home, "a1"), ".git"), memDir(home, "a2")
	a2Git := filepath.Join(a2Dir, ".git")
	a1Sock := unixClient(filepath.Join(home, "agents", "a1", "memfsd.sock"))
	a2Sock := unixClient(filepath.Join(home, "agents", "a2", "memfsd.sock"))
	const secret = "a2's private note: the vault code is 4711"

	if err := os.WriteFile(filepath.Join(a2Dir, "private.md"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git(t, a2Dir, "add", "private.md")
	git(t, a2Dir, "commit", "-q", "-m", "a2's own commit")
	commit := strings.TrimSpace(git(t, a2Dir, "rev-parse", "HEAD"))
	ids := []string{commit, strings.TrimSpace(git(t, a2Dir, "rev-parse", "HEAD^{tree}")), strings.TrimSpace(git(t, a2Dir, "rev-parse", "HEAD:private.md"))}
	fanOuts := map[string]bool{}
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(a2Git, "objects", id[:2], id[2:])); err != nil {
			t.Fatalf("a2's object %s is not loose: %v", id, err)
		}
		fanOuts[id[:2]] = true
	}
	for fan := range fanOuts {
		link := filepath.Join(a1Git, "objects", fan)
		os.RemoveAll(link)
		if err := os.Symlink(filepath.Join(a2Git, "objects", fan), link); err != nil {
			t.Fatal(err)
		}
	}
	// What a2's socket shows of its own file: the control.
	if code, body := getText(t, a2Sock, "/v1/agents/a2/file?path=private.md&rev="+commit); code != 200 || !strings.Contains(body, "vault code") {
		t.Fatalf("a2's own file at %s: %d %s", commit, code, body)
	}
	noLeak := func(how string) {
		t.Helper()
		for _, rev := range []string{commit, commit[:7], commit[:4]} {
			for name, c := range map[string]*http.Client{"the API": p.api, "a1's socket": a1Sock} {
				code, body := getText(t, c, "/v1/agents/a1/file?path=private.md&rev="+rev)
				if strings.Contains(body, "vault code") || code == 200 {
					t.Errorf("%s: %s answered a1's file?rev=%s with %d %s", how, name, rev, code, body)
				}
			}
		}
		cs, err := mcpSocket(t, filepath.Join(home, "agents", "a1", "memfsd.sock"))
		if err != nil {
			t.Fatal(err)
		}
		if text, isErr := mcpCall(t, cs, "memory_show", map[string]any{"path": "private.md", "rev": commit}); !isErr || strings.Contains(text, "vault code") {
			t.Errorf("%s: a1's memory_show at %s = %v %s", how, commit, isErr, text)
		}
		cs.Close()
	}
	noLeak("fan-out folders linked to a2's")
	for _, id := range ids { // the links still lead to a2's objects
		if _, err := os.Stat(filepath.Join(a1Git, "objects", id[:2], id[2:])); err != nil {
			t.Fatalf("a2's object %s went meanwhile (the test proves nothing): %v", id, err)
		}
	}
	st := p.status("a1")
	if !slices.ContainsFunc(st.GitRefused, func(s string) bool { return strings.Contains(s, "symbolic link") }) {
		t.Errorf("a1's status git_refused = %q, want the link named", st.GitRefused)
	}
	for fan := range fanOuts {
		os.Remove(filepath.Join(a1Git, "objects", fan))
	}

	// a2's memfsd commit lives in a2's packs: a1 links its pack folder.
	p.writeAndPush(t, srv, "a2", "private2.md", secret+"\n")
	commit = strings.TrimSpace(git(t, a2Dir, "rev-parse", "HEAD"))
	pack := filepath.Join(a1Git, "objects", "pack")
	if err := os.Rename(pack, pack+".mine"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(a2Git, "objects", "pack"), pack); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{commit, commit[:7]} {
		code, body := getText(t, a1Sock, "/v1/agents/a1/file?path=private2.md&rev="+rev)
		if strings.Contains(body, "vault code") || code == 200 {
			t.Errorf("objects/pack linked to a2's: a1's file?rev=%s = %d %s", rev, code, body)
		}
	}
	os.Remove(pack)
	os.Rename(pack+".mine", pack)
	p.writeAndPush(t, srv, "a1", "a1.md", "a1 goes on\n")
}

// commitZlibBombs commits, with the agent's own git in the work tree dir,
// two loose blobs of 1 GiB of zeros each (1.3 MB on disk): past, whose
// header states 10 bytes (it inflates past it), as bomb.md, and over, whose
// header states 1 GiB (over the cap), as bomb2.md, on HEAD (mktree,
// commit-tree, update-ref).
func commitZlibBombs(t *testing.T, dir string) (past, over, commit string) {
	t.Helper()
	gitDir := filepath.Join(dir, ".git")
	past = testgit.WriteZlibBomb(t, gitDir, 10, 1<<30)
	over = testgit.WriteZlibBomb(t, gitDir, 1<<30, 1<<30)
	mktree := exec.Command("git", "mktree")
	mktree.Dir, mktree.Env = dir, testgit.Env()
	mktree.Stdin = strings.NewReader(git(t, dir, "ls-tree", "HEAD") + "\n100644 blob " + past + "\tbomb.md\n100644 blob " + over + "\tbomb2.md\n")
	out, err := mktree.Output()
	if err != nil {
		t.Fatalf("git mktree: %v", err)
	}
	tree := strings.TrimSpace(string(out))
	commit = strings.TrimSpace(git(t, dir, "commit-tree", tree, "-p", "HEAD", "-m", "the agent's bomb"))
	git(t, dir, "update-ref", "refs/heads/main", commit)
	git(t, dir, "read-tree", "HEAD") // the index as HEAD: no person's git in progress
	return past, over, commit
}

// A zlib bomb the agent commits with its own git (issue 38): two loose
// blobs of 1 GiB of zeros each, 1.3 MB on disk, one whose header states
// 10 bytes (it inflates past it), one whose header states 1 GiB (over the
// cap), in a commit made by a's git (mktree, commit-tree, update-ref).
// Before, the store inflated each whole (go-git copies a loose object into
// memory however far it inflates) on the push check, history and search.
// Now each read is refused with an error naming the object: the push
// never carries the commit, file?rev= answers an error naming the object,
// history and search answer, the daemon's peak RSS stays small, and b
// goes on pushing.
func TestWalls_ZlibBombRefused(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "a", "--agent", "b")
	past, over, commit := commitZlibBombs(t, memDir(home, "a"))

	p.kickTurn(t, "a")
	code, body := getText(t, p.api, "/v1/agents/a/file?path=bomb.md&rev="+commit)
	if code == 200 || !strings.Contains(body, past) || !strings.Contains(body, "too large") {
		t.Errorf("a's file bomb.md at the bomb's commit: %d %s; want an error naming %s", code, body, past)
	}
	code, body = getText(t, p.api, "/v1/agents/a/file?path=bomb2.md&rev="+commit)
	if code == 200 || !strings.Contains(body, over) {
		t.Errorf("a's file bomb2.md at the bomb's commit: %d %s; want an error naming %s", code, body, over)
	}
	getText(t, p.api, "/v1/agents/a/history?path=bomb.md") // answers (it reads trees, no blob)
	code, body = getText(t, p.api, "/v1/agents/a/search?q=zeros")
	if len(body) > 1<<20 || code != 200 && !strings.Contains(body, past) && !strings.Contains(body, over) {
		t.Errorf("a's search: %d, %d bytes: %.300q; want an answer, an error naming a bomb if not 200", code, len(body), body)
	}
	// The push check reads the blobs the push would carry: refused.
	if tr := p.turn("a"); tr.Outcome == "pushed" || !(strings.Contains(tr.Error, past) || strings.Contains(tr.Error, over)) || !strings.Contains(tr.Error, "too large") {
		t.Errorf("a's turn = %s %q; want the push refused naming a bomb", tr.Outcome, tr.Error)
	}
	p.writeAndPush(t, srv, "b", "b.md", "b goes on\n")
	p.answersInTime(t, "a", "b")
	if _, err := gitTry(srv.RepoDir("a"), "cat-file", "-e", commit); err == nil {
		t.Error("the bomb's commit reached a's remote")
	}
	if p.cmd.ProcessState != nil {
		t.Fatalf("the daemon died: %v", p.cmd.ProcessState)
	}
	peak := peakRSSMiB(p.cmd.Process.Pid)
	t.Logf("daemon peak RSS %d MiB with two 1 GiB bombs", peak)
	if peak > 512 {
		t.Errorf("daemon peak RSS %d MiB with two 1 GiB bombs, want under 512", peak)
	}
	st := p.status("a")
	t.Logf("a's status: state %s, git_refused %q, last_error %s", st.State, st.GitRefused, st.LastError)
	for _, id := range []string{past, over} {
		if !slices.ContainsFunc(st.GitRefused, func(s string) bool { return strings.Contains(s, id[2:]) && strings.Contains(s, "git gc") }) {
			t.Errorf("a's status git_refused = %q, want %s named with a next step", st.GitRefused, id)
		}
	}
}
