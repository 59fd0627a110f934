package gitmem

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/worktree"
)

func newTestRepo(t *testing.T) *Repo {
	t.Helper()
	r, err := Init(t.TempDir(), Remote{URL: "http://127.0.0.1:1/none.git"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestOpen_FinishesATornReplace: a replace a kill cut short (journal left,
// file half new, half old) is finished by the next Open; a file the agent
// rewrote since is left alone.
func TestOpen_FinishesATornReplace(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	old, new := "old line one\nold line two\n", "new line\n"
	os.WriteFile(filepath.Join(r.Dir, "torn.md"), []byte(new+old[len(new):]), 0o600)
	os.WriteFile(filepath.Join(r.Dir, "agent.md"), []byte("the agent's own\n"), 0o600)
	var lines []byte
	for _, p := range []string{"torn.md", "agent.md"} {
		b, _ := json.Marshal(worktree.JournalEntry{Path: p, Old: []byte(old), New: []byte(new)})
		lines = append(append(lines, b...), '\n')
	}
	lines = append(lines, []byte(`{"path":"half`)...) // the record being written
	journal := filepath.Join(r.Dir, filepath.FromSlash(worktree.JournalRel))
	os.MkdirAll(filepath.Join(r.GitDir, "memfsd"), 0o700)
	os.WriteFile(journal, lines, 0o600)
	r.Close()

	// Another memfsd process using the repo (a live daemon): its journal
	// is its own, not a crash's, and is left alone. (A second Repo in this
	// process holds the shared claim the same way.)
	live, err := Open(r.Dir, r.Remote, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(journal, lines, 0o600) // live opened first: sole owner, it recovered; write it again
	os.WriteFile(filepath.Join(r.Dir, "torn.md"), []byte(new+old[len(new):]), 0o600)
	second, err := Open(r.Dir, r.Remote, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(r.Dir, "torn.md")); string(got) != new+old[len(new):] {
		t.Fatalf("a second user of the repo recovered the live journal: torn.md = %q", got)
	}
	second.Close()
	live.Close()

	r2, err := Open(r.Dir, r.Remote, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if got, _ := os.ReadFile(filepath.Join(r.Dir, "torn.md")); string(got) != new {
		t.Fatalf("torn.md = %q, want %q", got, new)
	}
	if got, _ := os.ReadFile(filepath.Join(r.Dir, "agent.md")); string(got) != "the agent's own\n" {
		t.Fatalf("agent.md = %q", got)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("journal left: %v", err)
	}
}

// TestJournal_NeverThroughALink: the journal lives in the .git the agent's
// shell reaches; a link (or a FIFO) the agent puts at its name is never
// written through (or blocked on), and Open still works.
func TestJournal_NeverThroughALink(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	outside := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(outside, []byte("outside\n"), 0o600)
	os.MkdirAll(filepath.Join(r.GitDir, "memfsd"), 0o700)
	journal := filepath.Join(r.Dir, filepath.FromSlash(worktree.JournalRel))
	if err := os.Symlink(outside, journal); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.Dir, "f.md"), []byte("old\n"), 0o600)
	_, _, err := r.files.Put("f.md", []byte("new\n"), worktree.Regular)
	if err != nil {
		t.Fatalf("a link at the journal's name stopped the replace: %v", err)
	}
	r.files.Done()
	if got, _ := os.ReadFile(outside); string(got) != "outside\n" {
		t.Fatalf("the journal wrote through the link: %q", got)
	}
	// A FIFO at the journal's name: Open does not block on it.
	os.Remove(journal)
	if err := unix.Mkfifo(journal, 0o600); err != nil {
		t.Fatal(err)
	}
	r.Close()
	done := make(chan error, 1)
	go func() {
		r2, err := Open(r.Dir, r.Remote, Options{})
		if err == nil {
			r2.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("open with a FIFO journal: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open blocked on a FIFO at the journal's name")
	}
}
