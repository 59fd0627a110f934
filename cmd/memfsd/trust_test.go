package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// Scenarios of the trust boundary (SPEC §8): routes the agent has must not
// change what is the operator's.

// runCLI runs the binary with the daemon's home and server, returning exit
// code and combined output.
func runCLI(t *testing.T, srv *gitserver.Server, home string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binPath, append(args, "--home", home, "--base-url", srv.URL)...)
	cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func TestTrust_OperatorRoutesOnlyOnTheAdminSocket(t *testing.T) {
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "op")
	persona := filepath.Join(memDir(home, "op"), "system", "persona.md")
	orig, _ := os.ReadFile(persona)

	for _, r := range []struct{ method, path, body string }{
		{"PUT", "/v1/agents/op/blocks/persona", "---\nread_only: true\n---\nI obey the agent now.\n"},
		{"PUT", "/v1/agents/intruder", ""},
		{"POST", "/v1/agents/op/accept", `{"deletes": true}`},
	} {
		var answer struct {
			Error string `json:"error"`
		}
		code, err := p.call(r.method, r.path, r.body, &answer)
		if err != nil || code != 403 || !strings.Contains(answer.Error, filepath.Join(home, "admin.sock")) {
			t.Fatalf("%s %s on the agent's socket: %d %q %v, want 403 naming the admin socket", r.method, r.path, code, answer.Error, err)
		}
	}
	if data, _ := os.ReadFile(persona); string(data) != string(orig) {
		t.Fatal("persona changed through the agent's socket")
	}
	var list struct {
		Agents []status `json:"agents"`
	}
	if p.get("/v1/agents", &list); len(list.Agents) != 1 {
		t.Fatalf("agents after a refused PUT: %+v", list.Agents)
	}
	if fi, err := os.Stat(filepath.Join(home, "admin.sock")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v %v", fi, err)
	}

	// The operator's way in works: memfsd block set goes to the admin socket.
	f := filepath.Join(t.TempDir(), "persona.md")
	os.WriteFile(f, []byte("---\nread_only: true\n---\nI am the operator's persona.\n"), 0o600)
	if code, out := runCLI(t, srv, home, "block", "set", "persona", "--agent", "op", "--file", f); code != 0 {
		t.Fatalf("block set: %d %s", code, out)
	}
	if got := git(t, srv.RepoDir("op"), "show", "main:system/persona.md"); !strings.Contains(got, "operator's persona") {
		t.Fatalf("remote persona after block set = %q", got)
	}
	if code, _ := p.adminCall("PUT", "/v1/agents/second?wait=30s", "", nil); code != 200 {
		t.Fatalf("PUT agent on the admin socket = %d", code)
	}
}

// Held deletions settled through the admin socket: restore, then accept.
func TestTrust_AcceptAndRestoreThroughTheDaemon(t *testing.T) {
	srv := gitserver.New(t, token)
	fixture.ImportInto(t, "memory-42", srv.RepoDir("hold"))
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "hold")
	dir := memDir(home, "hold")
	rmNotes := func() {
		for i := 0; i < 40; i++ {
			os.Remove(filepath.Join(dir, fmt.Sprintf("notes/n%02d.md", i)))
		}
		waitFor(t, 10*time.Second, "deletions held", func() bool { return len(p.status("hold").HeldDeletes) == 40 })
	}
	rmNotes()
	if code, out := runCLI(t, srv, home, "sync", "--agent", "hold", "--restore-deletes"); code != 0 || !strings.Contains(out, `"restored"`) {
		t.Fatalf("restore through the daemon: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes", "n17.md")); err != nil {
		t.Fatal("notes/n17.md not restored")
	}
	if st := p.status("hold"); len(st.HeldDeletes) != 0 || st.State == "error" {
		t.Fatalf("after restore: %+v", st)
	}

	rmNotes()
	code, out := runCLI(t, srv, home, "sync", "--agent", "hold", "--accept-deletes")
	if code != 0 {
		t.Fatalf("accept through the daemon: %d %s", code, out)
	}
	var answer struct {
		Turn turnResult `json:"turn"`
	}
	if err := json.Unmarshal([]byte(out), &answer); err != nil || answer.Turn.Outcome != "pushed" {
		t.Fatalf("accept answer: %v %s", err, out)
	}
	if tree := git(t, srv.RepoDir("hold"), "ls-tree", "-r", "--name-only", "main"); strings.Contains(tree, "notes/") {
		t.Fatalf("deletions not pushed:\n%s", tree)
	}
	if r := p.reminders("hold"); r.has("mass_delete_held") {
		t.Fatalf("reminder left: %+v", r)
	}
	if code, out := runCLI(t, srv, home, "sync", "--agent", "hold", "--accept-deletes"); code != 0 || !strings.Contains(out, "nothing held") {
		t.Fatalf("accept with nothing held: %d %s", code, out)
	}
}
