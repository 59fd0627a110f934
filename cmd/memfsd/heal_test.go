package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Objects gone from one agent's .git (issue 27): a backup of objects/ alone
// put back, so refs and the index name commits, trees and blobs it no
// longer holds. Before, every commit and sync of that agent failed for
// good ("letta-code tree checks: read blob ...: object not found", "push:
// read commit ...: object not found"): the tool's writes were undone and
// direct writes never saved. Now memfsd confirms the damage, moves the old
// .git aside (kept, named in a WARN line), clones afresh and commits the
// work tree on top: both writes reach a's remote, nothing is lost, git
// fsck is clean on a's folder and remote, and agent b never notices.
func TestHeal_ObjectsPutBackFromABackup(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "a", "--agent", "b", "--person-git-wait", "2s")
	aDir, bDir := memDir(home, "a"), memDir(home, "b")
	p.writeAndPush(t, srv, "b", "b-1.md", "b's first note\n")
	want, before := damageObjects(t, p, srv, aDir)

	// a writes directly and through the tool.
	if err := os.WriteFile(filepath.Join(aDir, "a-direct.md"), []byte("written by a's shell\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want["a-direct.md"] = "written by a's shell\n"
	if out, isErr := p.memory("a", `{"command":"create","path":"/memories/a-tool.md","file_text":"written by a's tool\n"}`); isErr {
		t.Errorf("a's tool write after the objects went: refused: %s", out)
	}
	want["a-tool.md"] = "written by a's tool\n"
	waitRemote(t, p, srv, "a", want, 60*time.Second)

	// b is unaffected: it writes and pushes as before.
	p.writeAndPush(t, srv, "b", "b-2.md", "b's second note\n")

	// Nothing lost in a's folder; both .gits and the remote pass fsck.
	for name, text := range want {
		if got, err := os.ReadFile(filepath.Join(aDir, name)); err != nil || string(got) != text {
			t.Errorf("a's %s in its folder = %q, %v; want %q", name, got, err, text)
		}
	}
	waitFor(t, 30*time.Second, "a clean", func() bool {
		p.postTurn("a", "2s")
		st := p.status("a")
		return st.State == "clean" && len(st.Dirty) == 0
	})
	waitRepackIdle(t, aDir)
	waitRepackIdle(t, bDir)
	for _, dir := range []string{aDir, srv.RepoDir("a"), bDir, srv.RepoDir("b")} {
		if out, err := gitTry(dir, "fsck", "--strict"); err != nil {
			t.Errorf("git fsck --strict %s: %s", dir, out)
		}
	}
	for _, name := range []string{"b-1.md", "b-2.md"} {
		if _, err := gitTry(srv.RepoDir("b"), "show", "main:"+name); err != nil {
			t.Errorf("b's %s not on b's remote", name)
		}
	}

	// The old .git is kept where the WARN line says, outside the memory
	// folder, under a's own folder.
	m := regexp.MustCompile(`level=WARN msg="[^"]*rebuilt[^"]*" agent=a .*aside=(\S+)`).FindStringSubmatch(p.logs.String())
	if m == nil {
		t.Fatalf("no WARN line naming where a's old .git went")
	}
	aside := strings.Trim(m[1], `"`)
	if filepath.Dir(aside) != filepath.Join(home, "agents", "a") {
		t.Errorf("old .git kept at %s, want it under %s", aside, filepath.Join(home, "agents", "a"))
	}
	if _, err := os.Stat(filepath.Join(aside, "HEAD")); err != nil {
		t.Errorf("old .git not kept at %s: %v", aside, err)
	}
	if got := strings.TrimSpace(mustRead(t, filepath.Join(aside, "refs", "heads", "main"))); got != before && !strings.Contains(mustRead(t, filepath.Join(aside, "packed-refs")), before) {
		t.Errorf("the kept .git's main = %q, want the damaged tip %s", got, before)
	}
	if strings.Contains(p.logs.String(), "agent=b") && regexp.MustCompile(`msg="[^"]*rebuil[^"]*" agent=b`).MatchString(p.logs.String()) {
		t.Errorf("b's .git was rebuilt too")
	}
	// Status says so, with a next step; the agent gets a reminder.
	var st struct {
		GitRebuilt []struct {
			Aside    string `json:"aside"`
			Missing  string `json:"missing"`
			NextStep string `json:"next_step"`
		} `json:"git_rebuilt"`
	}
	if code, err := p.get("/v1/agents/a/status", &st); err != nil || code != 200 || len(st.GitRebuilt) == 0 || st.GitRebuilt[0].Aside != aside || st.GitRebuilt[0].NextStep == "" {
		t.Errorf("a's status: %d %v %+v; want the rebuild at %s with a next step", code, err, st.GitRebuilt, aside)
	}
	var rem remindersAnswer
	if code, err := p.get("/v1/agents/a/reminders", &rem); err != nil || code != 200 || !rem.has("git_rebuilt") {
		t.Errorf("a's reminders: %d %v %+v; want git_rebuilt", code, err, rem)
	}
	for line := range strings.Lines(p.logs.String()) {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "agent=a") {
			t.Logf("%s", strings.TrimSpace(line))
		}
	}
}

// damageObjects makes a's .git lose objects as a backup of objects/ put
// back does: a writes and pushes, objects/ is copied, a writes more (a
// burst of direct writes that makes packs enough for a repack, pushed; one
// more committed and perhaps not pushed), and the copy is put back. It
// returns a's files and the tip the refs name, which is gone.
func damageObjects(t *testing.T, p *proc, srv *gitserver.Server, aDir string) (map[string]string, string) {
	t.Helper()
	objDir := filepath.Join(aDir, ".git", "objects")
	p.writeAndPush(t, srv, "a", "a-1.md", "a's first note\n")
	waitRepackIdle(t, aDir)
	saved := filepath.Join(t.TempDir(), "objects")
	if err := copyTree(objDir, saved); err != nil {
		t.Fatal(err)
	}
	p.writeAndPush(t, srv, "a", "a-2.md", "a's second note\n")
	want := map[string]string{"a-1.md": "a's first note\n", "a-2.md": "a's second note\n"}
	if err := os.MkdirAll(filepath.Join(aDir, "burst"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		name := fmt.Sprintf("burst/n-%02d.md", i)
		text := fmt.Sprintf("burst note %d\n", i)
		if err := os.WriteFile(filepath.Join(aDir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		want[name] = text
		time.Sleep(80 * time.Millisecond) // past the debounce: a pack each
	}
	waitRemote(t, p, srv, "a", want, 30*time.Second)
	// Committed by the commit loop; no turn asks for its push.
	if err := os.WriteFile(filepath.Join(aDir, "a-local.md"), []byte("committed here only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want["a-local.md"] = "committed here only\n"
	waitFor(t, 30*time.Second, "a-local.md committed", func() bool {
		_, err := gitTry(aDir, "cat-file", "-e", "HEAD:a-local.md")
		return err == nil
	})
	waitRepackIdle(t, aDir)
	before := git(t, aDir, "rev-parse", "HEAD")
	packs, _ := filepath.Glob(filepath.Join(objDir, "pack", "*.pack"))
	t.Logf("a's .git before the old objects/ go back: %d packs, %d repacks", len(packs), strings.Count(p.logs.String(), `msg=repacked agent=a`))

	// The old objects/ put back: refs and the index name what is gone.
	if err := os.RemoveAll(objDir); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(saved, objDir); err != nil {
		t.Fatal(err)
	}
	if _, err := gitTry(aDir, "cat-file", "-e", before); err == nil {
		t.Fatalf("setup: HEAD %s still readable after the old objects/ were put back", before)
	}
	return want, before
}

// waitRemote waits until every file of want is on id's remote as want has it.
func waitRemote(t *testing.T, p *proc, srv *gitserver.Server, id string, want map[string]string, d time.Duration) {
	t.Helper()
	var missing []string
	for end := time.Now().Add(d); ; {
		p.postTurn(id, "2s")
		files, err := remoteFiles(srv.RepoDir(id))
		missing = missing[:0]
		for name, text := range want {
			if files[name] != text {
				missing = append(missing, name)
			}
		}
		if err == nil && len(missing) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("after %s, %d of %d files not on %s's remote (%v): %v", d, len(missing), len(want), id, err, missing[:min(len(missing), 5)])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	data, _ := os.ReadFile(p)
	return string(data)
}

// The remote down when a's .git is to be rebuilt: the rebuild fails, a's
// status names what is missing and says it is tried again at the next
// sync; a's direct write stays in its folder; b writes and pushes
// meanwhile. Once the remote answers again a later sync rebuilds, and
// every file of a's reaches its remote.
func TestHeal_RemoteDownDuringTheRebuild(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	args := append([]string{"--agent", "a", "--agent", "b", "--person-git-wait", "2s"}, fastRetryArgs()...)
	p := startDaemon(t, srv, home, args...)
	aDir := memDir(home, "a")
	want, _ := damageObjects(t, p, srv, aDir)

	down := srv.AddFault(&gitserver.Fault{Match: "/v1/git/a/", Count: -1, Status: 503})
	if err := os.WriteFile(filepath.Join(aDir, "a-direct.md"), []byte("written while the remote is down\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want["a-direct.md"] = "written while the remote is down\n"
	var last struct {
		Class    string `json:"class"`
		Message  string `json:"message"`
		NextStep string `json:"next_step"`
	}
	waitFor(t, 30*time.Second, "a's status naming the failed rebuild", func() bool {
		p.postTurn("a", "1s")
		st := p.status("a")
		if json.Unmarshal(st.LastError, &last) != nil {
			return false
		}
		return strings.Contains(last.Message, "objects missing from .git") && strings.Contains(last.NextStep, "tries again at the next sync")
	})
	if last.Class != "retryable" {
		t.Errorf("a's last error class = %q, want retryable (the remote answered 503): %s", last.Class, last.Message)
	}
	if down.Hits.Load() == 0 {
		t.Errorf("the rebuild never asked the remote")
	}
	p.writeAndPush(t, srv, "b", "b-1.md", "b writes while a's remote is down\n")
	if got, err := os.ReadFile(filepath.Join(aDir, "a-direct.md")); err != nil || string(got) != want["a-direct.md"] {
		t.Errorf("a's direct write in its folder = %q, %v", got, err)
	}

	srv.ClearFaults()
	waitRemote(t, p, srv, "a", want, 90*time.Second)
	waitRepackIdle(t, aDir)
	for _, dir := range []string{aDir, srv.RepoDir("a")} {
		if out, err := gitTry(dir, "fsck", "--strict"); err != nil {
			t.Errorf("git fsck --strict %s: %s", dir, out)
		}
	}
	if asides, _ := filepath.Glob(filepath.Join(home, "agents", "a", "broken-git-*")); len(asides) != 1 {
		t.Errorf("kept .git folders: %v, want one", asides)
	}
}
