package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Block-set approvals are bound to the remote tip they were made against
// and end once their content is on the remote or superseded there (SPEC
// §8): an old operator persona cannot be brought back by the agent.

// blockSet runs `memfsd block set` with content in a file and fails the
// test unless it exits 0.
func blockSet(t *testing.T, srv *gitserver.Server, home, id, block, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), block+".md")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runCLI(t, srv, home, "block", "set", block, "--agent", id, "--file", f)
	if code != 0 {
		t.Fatalf("block set %s: %d %s", block, code, out)
	}
	return out
}

// peerPush writes content at rel in the peer clone (brought up to date
// first) and pushes it: an operator's push from another clone.
func peerPush(t *testing.T, peer, rel, content, message string) {
	t.Helper()
	git(t, peer, "pull", "-q", "--ff-only", "origin", "main")
	if err := os.WriteFile(filepath.Join(peer, filepath.FromSlash(rel)), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	git(t, peer, "commit", "-q", "-am", message)
	git(t, peer, "push", "-q", "origin", "main")
}

func TestTrust_StaleBlockSetApproval(t *testing.T) {
	t.Parallel()
	const (
		personaX = "---\ndescription: the operator's persona X\nread_only: true\n---\nI am persona X.\n"
		personaY = "---\ndescription: the operator's persona Y\nread_only: true\n---\nI am persona Y.\n"
	)
	srv := gitserver.New(t, token)
	home := t.TempDir()
	// A long debounce: the watcher must not undo the agent's write before
	// its shell commits it (that route is tested elsewhere).
	p := startDaemon(t, srv, home, "--agent", "st", "--debounce", "10s")
	dir := memDir(home, "st")
	bare := srv.RepoDir("st")
	persona := filepath.Join(dir, "system", "persona.md")
	remotePersona := func() string { return git(t, bare, "show", "main:system/persona.md") + "\n" }
	restores := func() int {
		return strings.Count(git(t, bare, "log", "--format=%s", "main"), "memfsd: restore read-only system/persona.md")
	}
	// agentBringsBack: the agent's shell writes content over the persona
	// it has and commits it; the turn must put the remote's back.
	agentBringsBack := func(content, want string) {
		t.Helper()
		tr := p.turn("st") // the peer's push comes in first
		if got, _ := os.ReadFile(persona); string(got) != want {
			t.Fatalf("local persona after the pull = %q, want %q (turn %+v)", got, want, tr)
		}
		before := restores()
		if err := os.WriteFile(persona, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "commit", "-q", "-am", "the persona I liked better")
		tr = p.turn("st")
		if tr.Outcome != "pushed" || tr.Status.Ahead != 0 {
			t.Fatalf("turn = %+v", tr)
		}
		if got := remotePersona(); got != want {
			t.Fatalf("remote persona = %q, want %q: a stale approval let the agent's commit through", got, want)
		}
		if restores() != before+1 {
			t.Fatalf("no new `memfsd: restore read-only` commit on the remote:\n%s", git(t, bare, "log", "--format=%s", "main"))
		}
		if r := p.reminders("st"); !r.has("read_only_rejected") {
			t.Fatalf("reminders = %+v", r)
		}
	}

	// The operator sets X (pushed), then pushes Y from another clone.
	blockSet(t, srv, home, "st", "persona", personaX)
	if got := remotePersona(); got != personaX {
		t.Fatalf("remote persona after block set = %q", got)
	}
	peer := peerClone(t, srv, "st")
	peerPush(t, peer, "system/persona.md", personaY, "operator: persona Y")
	agentBringsBack(personaX, personaY)

	// A fresh block set of the same X still goes through.
	blockSet(t, srv, home, "st", "persona", personaX)
	if got := remotePersona(); got != personaX {
		t.Fatalf("remote persona after a fresh block set = %q", got)
	}
	// Delivered, then changed back on the remote to what it was at the
	// approval's tip (Y): the approval ended with the delivery, although
	// no push of ours ran between the delivery and the change back.
	peerPush(t, peer, "system/persona.md", personaY, "operator: back to persona Y")
	agentBringsBack(personaX, personaY)

	// The record of approvals is gone once they ended.
	blockSet(t, srv, home, "st", "persona", personaY+"and more.\n")
	if got := remotePersona(); got != personaY+"and more.\n" {
		t.Fatalf("remote persona after the third block set = %q", got)
	}
	os.WriteFile(filepath.Join(dir, "note.md"), []byte("a note\n"), 0o600)
	git(t, dir, "add", "note.md")
	git(t, dir, "commit", "-q", "-m", "a note")
	p.turn("st")
	if data, err := os.ReadFile(filepath.Join(home, "agents", "st", "operator-blocks.json")); err == nil {
		t.Fatalf("a delivered approval is still on record: %s", data)
	}
}
