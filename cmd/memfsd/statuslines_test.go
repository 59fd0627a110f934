package main_test

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// statusTable runs `memfsd status` (the table) on home and returns the
// agent's row; every row is logged, as docs/operator.md shows them.
func statusTable(t *testing.T, home, id string) string {
	t.Helper()
	_, out := cliEnv(t, nil, "", "status", "--agent", id, "--home", home)
	t.Logf("memfsd status --agent %s:\n%s", id, out)
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "agent" && f[1] == id {
			return l
		}
	}
	t.Fatalf("no row for %s in:\n%s", id, out)
	return ""
}

// TestStatus_TableSaysWhyAndWhatNext (issue 39): a file over the size cap
// and a bad name were `error - -` in the table (the reason only in
// --json); now each is one line in WAITING ON THE OPERATOR with the cause
// as --json names it, the file as the reminder describes it, and the next
// step; fixed, the line goes.
func TestStatus_TableSaysWhyAndWhatNext(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "held", "--max-file-bytes", "4096")
	dir := memDir(home, "held")
	os.WriteFile(filepath.Join(dir, "big.md"), []byte(strings.Repeat("x", 5000)), 0o600)
	os.WriteFile(filepath.Join(dir, "tab\tname.md"), []byte("a tab in my name\n"), 0o600)
	waitFor(t, 20*time.Second, "two write problems", func() bool { return len(p.writeProblems("held")) == 2 })
	row := statusTable(t, home, "held")
	for _, want := range []string{
		" error ",
		"too_large: /memories/big.md (too large: 5000 bytes, the cap is 4096) (not committed: split the file or delete it, or raise --max-file-bytes",
		`bad_name: "/memories/tab\tname.md" (bad name: a control character or bytes that are not UTF-8) (not committed: rename it`,
	} {
		if !strings.Contains(row, want) {
			t.Errorf("status row lacks %q:\n%s", want, row)
		}
	}
	os.Remove(filepath.Join(dir, "big.md"))
	os.Rename(filepath.Join(dir, "tab\tname.md"), filepath.Join(dir, "tab-name.md"))
	waitFor(t, 20*time.Second, "the write problems gone", func() bool { return len(p.writeProblems("held")) == 0 })
	if row := statusTable(t, home, "held"); strings.Contains(row, "too_large") || strings.Contains(row, "bad_name") {
		t.Errorf("fixed, still shown:\n%s", row)
	}
}

// TestStatus_TableFullDisk: a file the full disk could not store is a
// line of its own, disk_full with the next step (was `error - -`).
func TestStatus_TableFullDisk(t *testing.T) {
	t.Parallel()
	home := smallDisk(t, "1m")
	srv := gitserver.New(t, token)
	p := startDaemon(t, srv, home, "--agent", "fd", "--no-fsync")
	fill := make([]byte, 700<<10)
	rand.Read(fill)
	os.WriteFile(filepath.Join(memDir(home, "fd"), "fill.bin"), fill, 0o600)
	waitFor(t, 60*time.Second, "disk_full", func() bool {
		wp := p.writeProblems("fd")
		return len(wp) == 1 && wp[0].Cause == "disk_full"
	})
	if row := statusTable(t, home, "fd"); !strings.Contains(row, "disk_full: /memories/fill.bin (disk full) (not committed: free space on the disk holding the memory") {
		t.Errorf("status row:\n%s", row)
	}
}

// TestStatus_RemoteAnswersSaidPlainly (issue 39): the remote's 503 is
// said as "retryable: sync ID: push: the remote answered HTTP 503 Service
// Unavailable to a push on URL" with its next step, never go-git's
// "unexpected client error: unexpected requesting ... status code" nor
// the class twice; a 401 never shows the body's newline as \n; a turn that
// answers delayed carries the agent's status, not an object of empty
// fields, and a next step; a token file fixed is tried at once: the auth
// error goes without a turn.
func TestStatus_RemoteAnswersSaidPlainly(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	tokDir := t.TempDir()
	tokFile := filepath.Join(tokDir, "token")
	os.WriteFile(tokFile, []byte(token), 0o600)
	const id = "msg"
	p := startDaemon(t, srv, home, append([]string{"--agent", id, "--token-file", tokFile}, fastRetryArgs()...)...)
	dir := memDir(home, id)

	// A 503 on every push.
	srv.FailNext("git-receive-pack", -1, 503)
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("one\n"), 0o600)
	waitFor(t, 10*time.Second, "a.md committed", func() bool { return len(p.status(id).Dirty) == 0 })
	var tr struct {
		Outcome  string `json:"outcome"`
		Class    string `json:"class"`
		NextStep string `json:"next_step"`
		Status   struct {
			Agent string `json:"agent"`
		} `json:"status"`
	}
	if code, err := p.call("POST", "/v1/agents/"+id+"/turn?wait=60s", "", &tr); err != nil || code != 200 {
		t.Fatalf("turn: %d %v", code, err)
	}
	if tr.Outcome != "delayed" || tr.Class != "retryable" || tr.NextStep == "" || tr.Status.Agent != id {
		t.Errorf("turn with a 503 = %+v", tr)
	}
	row := statusTable(t, home, id)
	if want := "retryable: sync " + id + ": push: the remote answered HTTP 503 Service Unavailable to a push on " + srv.RemoteURL(id) + " (next: "; !strings.Contains(row, want) {
		t.Errorf("status row lacks %q:\n%s", want, row)
	}
	for _, not := range []string{"unexpected", "git-receive-pack", "retryable: sync " + id + ": retryable"} {
		if strings.Contains(row, not) {
			t.Errorf("status row says %q:\n%s", not, row)
		}
	}
	srv.ClearFaults()

	// A turn that outlasts its wait: delayed, with the status as it stands.
	hang := srv.AddFault(&gitserver.Fault{Match: "git-receive-pack", Count: -1, Hang: true})
	os.WriteFile(filepath.Join(dir, "b.md"), []byte("two\n"), 0o600)
	waitFor(t, 10*time.Second, "b.md committed", func() bool { return len(p.status(id).Dirty) == 0 })
	var raw json.RawMessage
	if code, err := p.call("POST", "/v1/agents/"+id+"/turn?wait=200ms", "", &raw); err != nil || code != 200 {
		t.Fatalf("turn: %d %v", code, err)
	}
	json.Unmarshal(raw, &tr)
	if tr.Outcome != "delayed" || tr.Status.Agent != id || tr.NextStep == "" {
		t.Errorf("a turn past its wait = %s", raw)
	}
	hang.Release()
	srv.ClearFaults()

	// The server takes another token: auth, said without the body's newline.
	const newToken = "e2e-token-rotated-1234"
	srv.SetToken(newToken)
	os.WriteFile(filepath.Join(dir, "c.md"), []byte("three\n"), 0o600)
	waitFor(t, 10*time.Second, "c.md committed", func() bool { return len(p.status(id).Dirty) == 0 })
	p.turn(id)
	row = statusTable(t, home, id)
	if !strings.Contains(row, "auth: sync "+id+": push: the remote answered HTTP 401 Unauthorized") || strings.Contains(row, `\n`) {
		t.Errorf("status row with a refused token:\n%s", row)
	}
	// Fixed in the token file: tried at once, no turn needed.
	os.WriteFile(tokFile, []byte(newToken), 0o600)
	waitFor(t, 20*time.Second, "the auth error gone without a turn", func() bool {
		return string(p.status(id).LastError) == "null"
	})
	if got := git(t, srv.RepoDir(id), "show", "main:c.md"); got != "three" {
		t.Errorf("c.md on the server = %q", got)
	}
}
