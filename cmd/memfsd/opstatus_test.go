package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// `memfsd status` is where the operator looks (issue 28): one line per
// agent (table and --json alike) with its state, every hold waiting on the
// operator and the last error; an agent on disk that the running daemon
// does not manage is `unmanaged`; an agent added with PUT /v1/agents/{id}
// is managed again after a restart.
func TestStatus_OperatorView(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "memory-42", srv.RepoDir("hold"))
	home := t.TempDir()
	// dave is on disk, but no daemon manages it.
	if code, out := runCLI(t, srv, home, "sync", "--agent", "dave"); code != 0 {
		t.Fatalf("sync dave: %d %s", code, out)
	}
	p := startDaemon(t, srv, home, "--agent", "hold")
	if code, err := p.adminCall("PUT", "/v1/agents/carol", "", nil); err != nil || code != 200 {
		t.Fatalf("PUT carol: %d %v", code, err)
	}
	// carol reads a shared repository and has a mirror that refuses it
	// (another host: no token is sent there).
	if code, err := p.adminCall("PUT", "/v1/agents/carol/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
		t.Fatalf("attach team: %d %v", code, err)
	}
	mirror := gitserver.New(t, "another-token")
	if code, err := p.adminCall("PUT", "/v1/agents/carol/mirror", `{"url":"`+mirror.RemoteURL("carol")+`"}`, nil); err != nil || code != 200 {
		t.Fatalf("mirror set: %d %v", code, err)
	}
	waitFor(t, 10*time.Second, "the mirror's auth error", func() bool {
		var m struct {
			Mirror *struct {
				LastError json.RawMessage `json:"last_error"`
			} `json:"mirror"`
		}
		code, err := p.get("/v1/agents/carol/mirror", &m)
		return err == nil && code == 200 && m.Mirror != nil && strings.Contains(string(m.Mirror.LastError), `"auth"`)
	})
	dir := memDir(home, "hold")
	for i := 0; i < 40; i++ {
		os.Remove(filepath.Join(dir, fmt.Sprintf("notes/n%02d.md", i)))
	}
	waitFor(t, 10*time.Second, "deletions held", func() bool { return len(p.status("hold").HeldDeletes) == 40 })

	code, out := runCLI(t, srv, home, "status")
	if code != 2 {
		t.Fatalf("status exit %d, want 2:\n%s", code, out)
	}
	t.Logf("memfsd status:\n%s", out)
	line := regexp.MustCompile(`^(KIND|agent|shared|mirror)\s`)
	rows := map[string]string{}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if !line.MatchString(l) {
			t.Fatalf("a line of the table is broken: %q in\n%s", l, out)
		}
		if f := strings.Fields(l); len(f) > 2 {
			rows[f[0]+" "+f[1]] = l
		}
	}
	if r := rows["agent hold"]; !strings.Contains(r, " error ") || !strings.Contains(r, "mass_delete_held: notes/n00.md") || !strings.Contains(r, "--accept-deletes") {
		t.Fatalf("hold's line does not say what waits on the operator: %q\n%s", r, out)
	}
	if r := rows["agent dave"]; !strings.Contains(r, " unmanaged ") {
		t.Fatalf("dave's line does not say nothing manages it: %q\n%s", r, out)
	}
	if r := rows["agent carol"]; !strings.Contains(r, " clean ") {
		t.Fatalf("carol's line: %q\n%s", r, out)
	}
	if r := rows["mirror carol"]; !strings.Contains(r, " auth: ") || !strings.Contains(r, "(next: ") {
		t.Fatalf("carol's mirror line does not give the error's class and next step: %q\n%s", r, out)
	}
	if r := rows["shared team"]; r == "" {
		t.Fatalf("no line for the shared repository team:\n%s", out)
	}
	code, out = runCLI(t, srv, home, "status", "--json")
	var sts []struct {
		Agent   string   `json:"agent"`
		State   string   `json:"state"`
		Waiting []string `json:"waiting"`
	}
	if err := json.Unmarshal([]byte(out), &sts); err != nil || code != 2 || len(sts) != 4 {
		t.Fatalf("status --json: %d %v\n%s", code, err, out)
	}
	for _, s := range sts {
		if s.Agent == "hold" && (len(s.Waiting) != 1 || !strings.HasPrefix(s.Waiting[0], "mass_delete_held:")) {
			t.Fatalf("hold's waiting = %q", s.Waiting)
		}
		if s.Agent == "dave" && s.State != "unmanaged" {
			t.Fatalf("dave = %+v", s)
		}
	}
	if code, out := runCLI(t, srv, home, "status", "--agent", "dave"); code != 2 || !strings.Contains(out, "unmanaged") {
		t.Fatalf("status --agent dave: %d\n%s", code, out)
	}

	// A restart with --agent hold only: carol, added at runtime, is back.
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p2 := launchDaemon(t, srv, home, "--agent", "hold")
	p2.waitHealthy(30 * time.Second)
	waitFor(t, 20*time.Second, "carol synced after the restart", func() bool {
		var st status
		code, err := p2.get("/v1/agents/carol/status", &st)
		return err == nil && code == 200 && st.LastSyncAt != nil
	})
}

// With no daemon on the home, status reads the folder and says nothing
// syncs the agent (its state stays the folder's).
func TestStatus_NoDaemonSaysSo(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	if code, out := runCLI(t, srv, home, "sync", "--agent", "solo"); code != 0 {
		t.Fatalf("sync: %d %s", code, out)
	}
	code, out := runCLI(t, srv, home, "status")
	if code != 0 || !strings.Contains(out, "solo") || !strings.Contains(out, " clean ") || !strings.Contains(out, "no memfsd runs on this home") {
		t.Fatalf("status without a daemon: %d\n%s", code, out)
	}
}
