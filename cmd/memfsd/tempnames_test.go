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

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestRun_PeerPushesMemfsdTmpName: a peer pushes files named like memfsd's
// temporary files (.memfsd-tmp-*): the next sync is clean and the files
// are there (issue 27: every sync was "permanent: ... untrackable path").
func TestRun_PeerPushesMemfsdTmpName(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "tp")
	peer := peerClone(t, srv, "tp")
	for _, rel := range []string{".memfsd-tmp-notes", "sub/.memfsd-tmp-x"} {
		os.MkdirAll(filepath.Join(peer, "sub"), 0o700)
		os.WriteFile(filepath.Join(peer, rel), []byte("peer's "+rel+"\n"), 0o600)
	}
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-qm", "peer: files named like memfsd's temporaries")
	git(t, peer, "push", "-q")

	p.turn("tp")
	if st := p.status("tp"); string(st.LastError) != "null" {
		t.Fatalf("after the peer's push: last_error %s", st.LastError)
	}
	for _, rel := range []string{".memfsd-tmp-notes", "sub/.memfsd-tmp-x"} {
		if got, err := os.ReadFile(filepath.Join(memDir(home, "tp"), rel)); err != nil || string(got) != "peer's "+rel+"\n" {
			t.Errorf("%s in the memory folder: %q %v", rel, got, err)
		}
	}
	// And the agent keeps syncing: a write after it reaches the remote.
	if out, isErr := p.memory("tp", `{"command":"create","path":"/memories/after.md","file_text":"after\n"}`); isErr {
		t.Fatal(out)
	}
	p.turn("tp")
	if got := git(t, srv.RepoDir("tp"), "show", "main:after.md"); got != "after" {
		t.Fatalf("after.md on the remote: %q", got)
	}
}

// TestRun_AgentCommitsMemfsdTmpName: the agent's shell commits a file named
// like memfsd's temporaries: memfsd pushes it as any file, and a new host
// clones that memory (issue 27: no new host could clone it again). A
// commit carrying a path memfsd could not check out (.GIT/x, made with
// git's plumbing) is never pushed.
func TestRun_AgentCommitsMemfsdTmpName(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	// The plumbing below leaves HEAD ahead of the index, which is what a
	// person's git in progress looks like: memfsd waits for it, here 1 s.
	p := startDaemon(t, srv, home, "--agent", "tc", "--person-git-wait", "1s")
	dir := memDir(home, "tc")
	os.WriteFile(filepath.Join(dir, ".memfsd-tmp-evil"), []byte("mine\n"), 0o600)
	git(t, dir, "add", ".memfsd-tmp-evil")
	// memfsd may commit the file as a direct write before the shell does
	// (then the shell has nothing to commit): either way it is committed.
	if out, err := gitTry(dir, "commit", "-qm", "agent: a file named like memfsd's temporaries"); err != nil {
		if _, cerr := gitTry(dir, "cat-file", "-e", "HEAD:.memfsd-tmp-evil"); cerr != nil {
			t.Fatalf("git commit: %v\n%s", err, out)
		}
	}
	// The plumbing's person-git signs hold memfsd's sync up to 1 s, and a
	// turn on a loaded machine may answer before the push: turn again.
	waitFor(t, 60*time.Second, ".memfsd-tmp-evil pushed", func() bool {
		p.turn("tc")
		_, err := gitTry(srv.RepoDir("tc"), "cat-file", "-e", "main:.memfsd-tmp-evil")
		return err == nil
	})
	if got := git(t, srv.RepoDir("tc"), "show", "main:.memfsd-tmp-evil"); got != "mine" {
		t.Fatalf(".memfsd-tmp-evil on the remote: %q", got)
	}

	// A new host clones that memory.
	home2 := t.TempDir()
	p2 := startDaemon(t, srv, home2, "--agent", "tc")
	if st := p2.status("tc"); string(st.LastError) != "null" {
		t.Fatalf("a new host's clone: %s", st.LastError)
	}
	if got, err := os.ReadFile(filepath.Join(memDir(home2, "tc"), ".memfsd-tmp-evil")); err != nil || string(got) != "mine\n" {
		t.Fatalf("the new host's .memfsd-tmp-evil: %q %v", got, err)
	}

	// A tree memfsd could not check out itself is never pushed.
	before := git(t, srv.RepoDir("tc"), "rev-parse", "main")
	blob := strings.TrimSpace(gitIn(t, dir, "x\n", "hash-object", "-w", "--stdin"))
	sub := strings.TrimSpace(gitIn(t, dir, fmt.Sprintf("100644 blob %s\tx\n", blob), "mktree"))
	head := git(t, dir, "rev-parse", "HEAD")
	var tree strings.Builder
	for _, line := range strings.Split(git(t, dir, "ls-tree", "HEAD"), "\n") {
		tree.WriteString(line + "\n")
	}
	fmt.Fprintf(&tree, "040000 tree %s\t.GIT\n", sub)
	top := strings.TrimSpace(gitIn(t, dir, tree.String(), "mktree"))
	bad := git(t, dir, "commit-tree", top, "-p", head, "-m", "agent: a tree with .GIT/x")
	git(t, dir, "update-ref", "refs/heads/main", bad)
	var st status
	waitFor(t, 20*time.Second, "the held push naming the path", func() bool {
		p.turn("tc")
		if got := git(t, srv.RepoDir("tc"), "rev-parse", "main"); got != before {
			t.Fatalf("memfsd pushed a tree it cannot check out (main %s, was %s)", got, before)
		}
		st = p.status("tc")
		return strings.Contains(string(st.LastError), ".GIT")
	})
}

// gitIn runs git in dir with stdin.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestRun_CrashLeftoversRecoveredAtStart: bytes a crash left in flight are
// recovered at the next start, never silently left: memfsd's temporary
// file of a process that is gone (.git/memfsd/tmp) whose bytes git lacks
// is put in memfsd-recovered/ and committed; one git has is dropped; an
// older memfsd's leftover in the tree (.memfsd-tmp-*) is committed as the
// agent's write.
func TestRun_CrashLeftoversRecoveredAtStart(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lo")
	if out, isErr := p.memory("lo", `{"command":"create","path":"/memories/known.md","file_text":"known\n"}`); isErr {
		t.Fatal(out)
	}
	p.turn("lo")
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	dir := memDir(home, "lo")
	tmp := filepath.Join(dir, ".git", "memfsd", "tmp")
	os.MkdirAll(tmp, 0o700)
	// Start time 1: this pid, but not this process (it is gone).
	gone := fmt.Sprintf("%d-1", os.Getpid())
	os.WriteFile(filepath.Join(tmp, "take-"+gone+"-7"), []byte("the agent's unsaved words\n"), 0o600)
	os.WriteFile(filepath.Join(tmp, "w-"+gone+"-8"), []byte("known\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "notes"), 0o700)
	os.WriteFile(filepath.Join(dir, "notes", ".memfsd-tmp-take-99-1"), []byte("older memfsd's aside\n"), 0o600)

	p = startDaemon(t, srv, home, "--agent", "lo")
	p.turn("lo")
	waitFor(t, 10*time.Second, "the leftovers committed and pushed", func() bool {
		files, err := gitTry(srv.RepoDir("lo"), "ls-tree", "-r", "--name-only", "main")
		return err == nil && strings.Contains(files, "memfsd-recovered/take-"+gone+"-7") && strings.Contains(files, "notes/.memfsd-tmp-take-99-1")
	})
	if got := git(t, srv.RepoDir("lo"), "show", "main:memfsd-recovered/take-"+gone+"-7"); got != "the agent's unsaved words" {
		t.Fatalf("recovered bytes on the remote: %q", got)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Fatalf("leftovers still in .git/memfsd/tmp: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, "memfsd-recovered", "w-"+gone+"-8")); err == nil {
		t.Fatal("a leftover git already holds was recovered into the memory")
	}
}
