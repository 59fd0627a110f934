package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Rotated tokens: all the same length, so an in-place rewrite can keep the
// file's size.
const (
	rotTokA = "rot-token-AAAA-1111"
	rotTokB = "rot-token-BBBB-2222"
	rotTokC = "rot-token-CCCC-3333"
	rotTokD = "rot-token-DDDD-4444"
)

// tokenLayout is a way a token file is kept and replaced.
type tokenLayout struct {
	name string
	// setup writes the first token under dir and returns the path for
	// --token-file and how to put a new token there.
	setup func(t *testing.T, dir, tok string) (path string, rotate func(tok string))
}

var tokenLayouts = []tokenLayout{
	{"InPlaceRewrite", func(t *testing.T, dir, tok string) (string, func(string)) {
		p := filepath.Join(dir, "token")
		write := func(tok string) {
			// O_TRUNC then write: the same inode, as `echo tok > file`.
			if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write(tok)
		return p, write
	}},
	{"KubernetesDataSwap", func(t *testing.T, dir, tok string) (string, func(string)) {
		// A projected Secret volume: token -> ..data/token, ..data ->
		// ..<timestamp>; an update writes a new timestamped folder and
		// renames a new ..data symlink over the old one.
		n := 0
		swap := func(tok string) {
			n++
			ts := fmt.Sprintf("..2025_01_01_00_00_%02d.%d", n, n)
			if err := os.Mkdir(filepath.Join(dir, ts), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ts, "token"), []byte(tok), 0o600); err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(dir, "..data_tmp")
			if err := os.Symlink(ts, tmp); err != nil {
				t.Fatal(err)
			}
			old, _ := os.Readlink(filepath.Join(dir, "..data"))
			if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
				t.Fatal(err)
			}
			if old != "" {
				os.RemoveAll(filepath.Join(dir, old))
			}
		}
		swap(tok)
		p := filepath.Join(dir, "token")
		if err := os.Symlink(filepath.Join("..data", "token"), p); err != nil {
			t.Fatal(err)
		}
		return p, swap
	}},
}

// TestRun_TokenFileRotatesWithoutRestart: the server refuses the old token
// from the moment it rotates; the file is rewritten (in place, or by a
// Kubernetes ..data swap); the daemon notices by itself and the next turn
// of every agent pushes with the new token, nothing lost. An empty file
// after that keeps the last good token and says so in status.
func TestRun_TokenFileRotatesWithoutRestart(t *testing.T) {
	t.Parallel()
	for _, l := range tokenLayouts {
		t.Run(l.name, func(t *testing.T) {
			srv := gitserver.New(t, rotTokA)
			home := t.TempDir()
			tokPath, rotate := l.setup(t, t.TempDir(), rotTokA)
			ids := []string{"rot1", "rot2"}
			p := startDaemon(t, srv, home, "--agent", ids[0], "--agent", ids[1], "--token-file", tokPath)
			writeAndTurn(t, p, ids, "before.md", "pushed")

			// The host rotates: the old token is refused from now on. The
			// agents write meanwhile (committed locally).
			srv.SetToken(rotTokB)
			for _, id := range ids {
				os.WriteFile(filepath.Join(memDir(home, id), "during.md"), []byte("written while the token was stale\n"), 0o600)
			}
			logged := strings.Count(p.logs.String(), "token file changed")
			rotate(rotTokB)
			// The watch notices with no sync to prompt it.
			waitFor(t, 10*time.Second, "the daemon re-read the token file", func() bool {
				return strings.Count(p.logs.String(), "token file changed") > logged
			})
			for _, id := range ids {
				waitFor(t, 10*time.Second, "during.md committed", func() bool {
					return len(p.status(id).Dirty) == 0 && gitOK(memDir(home, id), "cat-file", "-e", "HEAD:during.md")
				})
				if tr := p.turn(id); tr.Outcome != "pushed" || string(tr.Status.LastError) != "null" {
					t.Fatalf("turn %s after the rotation = %+v", id, tr)
				}
			}
			writeAndTurn(t, p, ids, "after.md", "pushed")

			// Emptied by a botched rotation: the last good token stays, a
			// warning names the file, status shows it.
			rotate("")
			waitFor(t, 10*time.Second, "the empty token file reported in status", func() bool {
				return strings.Contains(statusField(t, p, ids[0], "token_file_problem"), tokPath)
			})
			writeAndTurn(t, p, ids, "kept.md", "pushed")
			if n := strings.Count(p.logs.String(), "token file cannot be used"); n != 1 {
				t.Fatalf("%d warnings about the empty token file, want 1", n)
			}
			// A good token again clears it.
			srv.SetToken(rotTokC)
			rotate(rotTokC)
			waitFor(t, 10*time.Second, "the problem cleared", func() bool {
				return statusField(t, p, ids[0], "token_file_problem") == ""
			})
			writeAndTurn(t, p, ids, "last.md", "pushed")

			for _, id := range ids {
				for _, f := range []string{"before.md", "during.md", "after.md", "kept.md", "last.md"} {
					git(t, srv.RepoDir(id), "cat-file", "-e", "main:"+f)
				}
				if l, r := git(t, memDir(home, id), "rev-parse", "HEAD"), git(t, srv.RepoDir(id), "rev-parse", "main"); l != r {
					t.Fatalf("%s: local %s, remote %s", id, l, r)
				}
				git(t, srv.RepoDir(id), "fsck", "--strict")
			}
			assertNoToken(t, p, home, ids, rotTokA, rotTokB, rotTokC)
		})
	}
}

// TestRun_TokenRefusedRereadsFile: the token file is a symlink into a
// folder the watch does not see. Rewritten there, the stat before the sync
// notices. Then it changes in a way neither the watch nor the stat sees (a symlink into a folder not watched, rewritten
// in place at the same size and modification time); the server refuses
// the old token; the auth failure re-reads the file and the same turn
// pushes with the new token. Then a token the server refuses and the file
// still holds fails as auth, with a next step naming the file; fixing the
// file is enough for the next turn.
func TestRun_TokenRefusedRereadsFile(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, rotTokA)
	home := t.TempDir()
	target := filepath.Join(t.TempDir(), "real-token")
	if err := os.WriteFile(target, []byte(rotTokA), 0o600); err != nil {
		t.Fatal(err)
	}
	tokPath := filepath.Join(t.TempDir(), "token")
	if err := os.Symlink(target, tokPath); err != nil {
		t.Fatal(err)
	}
	ids := []string{"ref1"}
	p := startDaemon(t, srv, home, "--agent", ids[0], "--token-file", tokPath)
	writeAndTurn(t, p, ids, "before.md", "pushed")

	const refused = "the server refused the token; the token file had changed"

	// Rewritten where the watch does not look (the symlink's target): the
	// stat before the sync sees a new modification time, and the turn
	// sends the new token first time.
	srv.SetToken(rotTokB)
	time.Sleep(10 * time.Millisecond) // a modification time of its own
	if err := os.WriteFile(target, []byte(rotTokB), 0o600); err != nil {
		t.Fatal(err)
	}
	writeAndTurn(t, p, ids, "stat.md", "pushed")
	if strings.Contains(p.logs.String(), refused) {
		t.Fatal("the stat before the sync missed the new token: it took an auth failure")
	}

	// Rewritten unseen by both: same inode, size and modification time.
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	srv.SetToken(rotTokC)
	if err := os.WriteFile(target, []byte(rotTokC), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(target, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	writeAndTurn(t, p, ids, "during.md", "pushed")
	if !strings.Contains(p.logs.String(), refused) {
		t.Fatalf("the turn pushed without the auth failure the test needs (the watch or stat saw the edit)")
	}

	// The server moves on, the file does not: auth, with the file's step.
	srv.SetToken(rotTokD)
	tr := writeAndTurn(t, p, ids, "stale.md", "failed")
	var le struct {
		Class, Message string
		NextStep       string `json:"next_step"`
	}
	if err := json.Unmarshal(tr.Status.LastError, &le); err != nil {
		t.Fatal(err)
	}
	if le.Class != "auth" || !strings.Contains(le.NextStep, tokPath) || !strings.Contains(le.NextStep, "without a restart") {
		t.Fatalf("last_error = %+v, want class auth and a next step naming %s", le, tokPath)
	}
	if !strings.Contains(le.Message, tokPath) {
		t.Fatalf("message %q does not say the token file was re-read", le.Message)
	}
	// Fixing the file is enough (and nothing written meanwhile is lost).
	if err := os.WriteFile(target, []byte(rotTokD), 0o600); err != nil {
		t.Fatal(err)
	}
	tr = p.turn(ids[0])
	if tr.Outcome != "pushed" || string(tr.Status.LastError) != "null" {
		t.Fatalf("turn after fixing the file = %+v", tr)
	}
	for _, f := range []string{"before.md", "stat.md", "during.md", "stale.md"} {
		git(t, srv.RepoDir(ids[0]), "cat-file", "-e", "main:"+f)
	}
	git(t, srv.RepoDir(ids[0]), "fsck", "--strict")
	assertNoToken(t, p, home, ids, rotTokA, rotTokB, rotTokC, rotTokD)
}

// writeAndTurn writes name in each agent, waits for its commit and runs a
// turn that must end in outcome; it returns the last turn.
func writeAndTurn(t *testing.T, p *proc, ids []string, name, outcome string) turnResult {
	t.Helper()
	var tr turnResult
	for _, id := range ids {
		dir := memDir(p.home, id)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name+" of "+id+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, name+" committed", func() bool { return gitOK(dir, "cat-file", "-e", "HEAD:"+name) })
		if tr = p.turn(id); tr.Outcome != outcome {
			t.Fatalf("turn %s after %s = %+v, want %s", id, name, tr, outcome)
		}
	}
	return tr
}

func gitOK(dir string, args ...string) bool {
	_, err := gitTry(dir, args...)
	return err == nil
}

// statusField is one string field of an agent's status.
func statusField(t *testing.T, p *proc, id, field string) string {
	t.Helper()
	var m map[string]any
	if code, err := p.get("/v1/agents/"+id+"/status", &m); err != nil || code != 200 {
		t.Fatalf("status %s: %d %v", id, code, err)
	}
	s, _ := m[field].(string)
	return s
}

// assertNoToken: no token reaches the logs, status, or any file under home
// (.git/config included).
func assertNoToken(t *testing.T, p *proc, home string, ids []string, toks ...string) {
	t.Helper()
	var out []byte
	for _, id := range ids {
		var m map[string]any
		p.get("/v1/agents/"+id+"/status", &m)
		b, _ := json.Marshal(m)
		out = append(out, b...)
	}
	for _, tok := range toks {
		if strings.Contains(p.logs.String(), tok) || strings.Contains(string(out), tok) {
			t.Fatalf("token %s in the logs or status", tok)
		}
		filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Type().IsRegular() {
				if data, _ := os.ReadFile(path); strings.Contains(string(data), tok) {
					t.Errorf("token %s in %s", tok, path)
				}
			}
			return nil
		})
	}
}

// TestRun_TokenFileEmptyAtStart: a --token-file that exists but is empty
// (or only whitespace), with no MEMFSD_TOKEN, stops `memfsd run` at once
// with an error naming the file and what to do (issue 28: it started,
// logged "keeping the last good token" when there was none, and the remote
// answered an auth failure later). With MEMFSD_TOKEN beside it, that token
// stands and the daemon starts.
func TestRun_TokenFileEmptyAtStart(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	tokPath := filepath.Join(t.TempDir(), "token")
	for _, content := range []string{"", " \n\n"} {
		os.WriteFile(tokPath, []byte(content), 0o600)
		cmd := exec.Command(binPath, "run", "--home", home, "--base-url", srv.URL, "--agent", "et", "--token-file", tokPath)
		cmd.Env = append(os.Environ(), "MEMFSD_TOKEN=")
		cmd.WaitDelay = 5 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%q: exit 0\n%s", content, out.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%q: still running after 10 s, want an error at start:\n%s", content, out.String())
		}
		for _, want := range []string{tokPath, "is empty", "put the token in it"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%q: the error lacks %q:\n%s", content, want, out.String())
			}
		}
	}
	// The fallback token stands while the file is empty.
	os.WriteFile(tokPath, nil, 0o600)
	p := startDaemon(t, srv, home, "--agent", "et", "--token-file", tokPath)
	writeAndTurn(t, p, []string{"et"}, "with-fallback.md", "pushed")
}
