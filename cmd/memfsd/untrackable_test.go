package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// untrackable are the paths git cannot track that tests write into the
// memory folder (as the agent's shell would), with the files written
// beside them at the same time, which must all be committed and pushed.
var (
	untrackable = []string{".GIT", "Deep/x/.Git", "inner/.git", "sub/.git", "sub2/.git"}
	trackable   = []string{"Deep/x/real.md", "inner/note.md", "notes/a.md", "sub/keep.md", "sub2/inside.md", "top.md"}
)

// writeUntrackable makes, in dir: sub/.git as a file (a submodule's or a
// worktree's link), inner/.git/ as a folder with files, .GIT as a file,
// Deep/x/.Git/config, and sub2, a nested repository (git init) with a
// committed file — and the trackable files beside them.
func writeUntrackable(t *testing.T, dir string) {
	t.Helper()
	put := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put("sub/.git", "gitdir: ../.git/worktrees/sub\n")
	put("inner/.git/config", "[core]\n\tbare = false\n")
	put("inner/.git/HEAD", "ref: refs/heads/main\n")
	put(".GIT", "not git's\n")
	put("Deep/x/.Git/config", "[core]\n")
	if err := os.MkdirAll(filepath.Join(dir, "sub2"), 0o700); err != nil {
		t.Fatal(err)
	}
	git(t, filepath.Join(dir, "sub2"), "init", "-q")
	put("sub2/inside.md", "kept in a nested repository\n")
	git(t, filepath.Join(dir, "sub2"), "add", "inside.md")
	git(t, filepath.Join(dir, "sub2"), "commit", "-qm", "nested")
	for _, p := range trackable {
		put(p, "memory in "+p+"\n")
	}
}

// dotGit matches a path with a part git reads as .git.
var dotGit = regexp.MustCompile(`(?i)(^|/)\.git(/|$)`)

// checkRemoteHasOnlyTrackable checks, on a clone of the remote, that every
// trackable file is there with its content, no untrackable path is, and
// git fsck --strict is clean.
func checkRemoteHasOnlyTrackable(t *testing.T, srv *gitserver.Server, id string) {
	t.Helper()
	peer := peerClone(t, srv, id)
	files := strings.Split(git(t, peer, "ls-tree", "-r", "--name-only", "HEAD"), "\n")
	for _, want := range trackable {
		found := false
		for _, f := range files {
			found = found || f == want
		}
		if !found {
			t.Errorf("%s is not on the remote; it has:\n%s", want, strings.Join(files, "\n"))
			continue
		}
		if got := git(t, peer, "show", "HEAD:"+want); got != "memory in "+want && want != "sub2/inside.md" {
			t.Errorf("remote %s = %q", want, got)
		}
	}
	for _, f := range files {
		if dotGit.MatchString(f) {
			t.Errorf("an untrackable path reached the remote: %q", f)
		}
	}
	if out := git(t, peer, "ls-tree", "-r", "HEAD"); strings.Contains(out, "160000") {
		t.Errorf("a gitlink reached the remote:\n%s", out)
	}
	git(t, srv.RepoDir(id), "fsck", "--strict")
	git(t, peer, "fsck", "--strict")
}

func checkSkippedReminder(t *testing.T, text string) {
	t.Helper()
	for _, p := range untrackable {
		if !strings.Contains(text, "/memories/"+p) {
			t.Errorf("the reminder does not name %s:\n%s", p, text)
		}
	}
	for _, p := range trackable {
		if strings.Contains(text, "/memories/"+p) {
			t.Errorf("the reminder names %s, which was saved:\n%s", p, text)
		}
	}
}

// One .git below the root (a file, a folder, any case, a nested
// repository) used to fail every direct-write commit of the batch with
// "bad path", re-queued forever: nothing else was committed or pushed.
// Now those paths are skipped, named in a path_skipped reminder and in
// status, logged once each, and every other write of the same moment is
// committed and pushed; the state is clean.
func TestRun_UntrackablePathsSkipped(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "ut")
	dir := memDir(home, "ut")
	writeUntrackable(t, dir)
	waitFor(t, 15*time.Second, "every trackable write committed", func() bool {
		for _, f := range trackable {
			if _, err := gitTry(dir, "cat-file", "-e", "HEAD:"+f); err != nil {
				return false
			}
		}
		return true
	})
	tr := p.turn("ut")
	if tr.Outcome != "pushed" || tr.Error != "" {
		t.Fatalf("turn = %+v", tr)
	}
	checkRemoteHasOnlyTrackable(t, srv, "ut")

	r := p.reminders("ut")
	if !r.has("path_skipped") {
		t.Fatalf("no path_skipped reminder: %+v", r)
	}
	checkSkippedReminder(t, r.Text)
	var st struct {
		State       string          `json:"state"`
		LastError   json.RawMessage `json:"last_error"`
		Dirty       []string        `json:"dirty"`
		PathSkipped []struct {
			Path   string `json:"path"`
			Reason string `json:"reason"`
		} `json:"path_skipped"`
	}
	if code, err := p.get("/v1/agents/ut/status", &st); err != nil || code != 200 {
		t.Fatalf("status: %d %v", code, err)
	}
	if st.State != "clean" || string(st.LastError) != "null" || len(st.Dirty) != 0 {
		t.Fatalf("status = %+v, want clean with no error", st)
	}
	var skipped []string
	for _, s := range st.PathSkipped {
		skipped = append(skipped, s.Path)
	}
	if strings.Join(skipped, ",") != strings.Join(untrackable, ",") {
		t.Fatalf("status path_skipped = %v, want %v", skipped, untrackable)
	}

	// More writes into them change nothing and are not logged again; a
	// write beside them still goes through.
	os.WriteFile(filepath.Join(dir, "sub", ".git"), []byte("gitdir: elsewhere\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "inner", ".git", "config"), []byte("[core]\n\tbare = true\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "later.md"), []byte("later\n"), 0o600)
	waitFor(t, 10*time.Second, "later.md committed", func() bool {
		_, err := gitTry(dir, "cat-file", "-e", "HEAD:later.md")
		return err == nil
	})
	if tr := p.turn("ut"); tr.Outcome != "pushed" {
		t.Fatalf("second turn = %+v", tr)
	}
	logs := p.logs.String()
	for _, path := range untrackable {
		if n := strings.Count(logs, "path="+path+" "); n != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", path, n, logs)
		}
	}
	if strings.Contains(logs, "bad path") || strings.Contains(logs, "commit failed") {
		t.Fatalf("a commit failed:\n%s", logs)
	}

	// Once gone, it is no longer named.
	os.Remove(filepath.Join(dir, ".GIT"))
	if r := p.reminders("ut"); strings.Contains(r.Text, "/memories/.GIT") {
		t.Fatalf("the reminder still names .GIT after its removal:\n%s", r.Text)
	}
}

// memfsd sync over the same folder: exit 0, every trackable file pushed,
// the reminder and status name the skipped paths and status is clean.
func TestSync_UntrackablePathsSkipped(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	if code, out, errOut := runSync(t, srv, home, token); code != 0 {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, errOut)
	}
	writeUntrackable(t, memDir(home, "cli"))
	if code, out, errOut := runSync(t, srv, home, token); code != 0 {
		t.Fatalf("sync with untrackable paths: exit %d\n%s%s", code, out, errOut)
	}
	checkRemoteHasOnlyTrackable(t, srv, "cli")
	code, out := runCLI(t, srv, home, "reminders", "--agent", "cli")
	if code != 0 {
		t.Fatalf("reminders: exit %d %s", code, out)
	}
	checkSkippedReminder(t, out)
	code, out = runCLI(t, srv, home, "status", "--agent", "cli", "--json")
	if code != 0 || !strings.Contains(out, `"path_skipped"`) || !strings.Contains(out, `"state": "clean"`) {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	// A second sync finds nothing to do and still succeeds.
	if code, out, errOut := runSync(t, srv, home, token); code != 0 {
		t.Fatalf("second sync: exit %d\n%s%s", code, out, errOut)
	}
}
