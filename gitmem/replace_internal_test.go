package gitmem

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-git/go-git/v5/plumbing/filemode"
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

// startWriter runs a shell command on $F (the path rel in r) and waits
// until it has had time to open the file: under a held lease its open
// waits, so the command is then blocked inside open(2).
func startWriter(t *testing.T, r *Repo, rel, script string) chan error {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "F="+filepath.Join(r.Dir, rel))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Wait until the writer's open waits on memfsd's lease: the kernel
	// shows the lease BREAKING in /proc/locks (a fixed pause was not
	// enough for bash to get there on a loaded machine).
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(r.Dir, rel), &st); err != nil {
		t.Fatal(err)
	}
	// /proc/locks names the file major:minor:inode (hex device numbers);
	// the inode alone can be another filesystem's file.
	ino := fmt.Sprintf(" %02x:%02x:%d ", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		locks, _ := os.ReadFile("/proc/locks")
		breaking := false
		for _, l := range strings.Split(string(locks), "\n") {
			if strings.Contains(l, "LEASE") && strings.Contains(l, "BREAKING") && strings.Contains(l, ino) {
				breaking = true
			}
		}
		if breaking {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer never waited on the lease of %s", rel)
		}
	}
	return done
}

// TestReplace_WriterWaitingOnTheLease: a `>` writer that opens the file
// while memfsd replaces it writes onto the file at the name, not onto one
// that left the folder (with a rename-exchange its bytes were lost).
// Not parallel: with other tests beside it under -race, the writer let
// through by Reacquire was not back in its open within the re-lease
// (seen twice, removed = true; under investigation, see the stop note).
func TestReplace_WriterWaitingOnTheLease(t *testing.T) {
	r := newTestRepo(t)
	os.WriteFile(filepath.Join(r.Dir, "f.md"), []byte("old\n"), 0o600)
	var done chan error
	_, replaced, st, err := r.replaceWorkFile("f.md", func(cur displaced) ([]byte, filemode.FileMode, bool) {
		if string(cur.data) != "old\n" {
			t.Errorf("decide saw %q", cur.data)
		}
		done = startWriter(t, r, "f.md", `printf 'agent wrote this\n' > "$F"`)
		return []byte("new\n"), filemode.Regular, true
	})
	if err != nil || !replaced || st == nil {
		t.Fatalf("replace: replaced=%v st=%v err=%v", replaced, st, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.journal.done()
	if got, _ := os.ReadFile(filepath.Join(r.Dir, "f.md")); string(got) != "agent wrote this\n" {
		t.Fatalf("f.md = %q: the agent's write was lost", got)
	}
}

// TestRemove_WriterWaitingOnTheLease: a `>>` writer that opens the file
// while a pull removes it keeps what it wrote: the file is put back.
// With two busy loops beside it this failed 10 times in 100 (removed =
// true: Reacquire took the lease back before the woken writer ran, and its
// bytes went into the removed file) until Reacquire counted the waiters
// and watched their opens; 0 in 300 since.
func TestRemove_WriterWaitingOnTheLease(t *testing.T) {
	r := newTestRepo(t)
	os.WriteFile(filepath.Join(r.Dir, "f.md"), []byte("old\n"), 0o600)
	var done chan error
	_, removed, err := r.removeWorkFile("f.md", func(cur displaced) bool {
		done = startWriter(t, r, "f.md", `printf 'appended\n' >> "$F"`)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if removed {
		t.Fatal("removed = true, want the agent's write kept")
	}
	if got, _ := os.ReadFile(filepath.Join(r.Dir, "f.md")); string(got) != "old\nappended\n" {
		t.Fatalf("f.md = %q", got)
	}
	// Without a writer, the file goes.
	_, removed, err = r.removeWorkFile("f.md", func(displaced) bool { return true })
	if err != nil || !removed {
		t.Fatalf("plain remove: %v %v", removed, err)
	}
	if _, err := os.Lstat(filepath.Join(r.Dir, "f.md")); !os.IsNotExist(err) {
		t.Fatalf("f.md still there: %v", err)
	}
}

func TestTorn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cur, old, new string
		want          bool
	}{
		{"old content", "old content", "new", false},          // not begun
		{"new", "old content", "new", false},                  // done
		{"newcontent", "old content", "new", false},           // not a mix
		{"new content", "old content", "new", true},           // written, not yet truncated
		{"nld content", "old content", "new", true},           // one byte written
		{"new version lo", "old", "new version longer", true}, // growing, cut short
		{"new version", "old", "new version longer", true},
		{"agent's own", "old content", "new", false},
		{"", "old", "new", false},
	} {
		if got := torn([]byte(c.cur), []byte(c.old), []byte(c.new)); got != c.want {
			t.Errorf("torn(%q, %q, %q) = %v, want %v", c.cur, c.old, c.new, got, c.want)
		}
	}
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
		b, _ := json.Marshal(journalEntry{Path: p, Old: []byte(old), New: []byte(new)})
		lines = append(append(lines, b...), '\n')
	}
	lines = append(lines, []byte(`{"path":"half`)...) // the record being written
	journal := filepath.Join(r.Dir, filepath.FromSlash(journalRel))
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

// TestReplace_BusyFilesShareOneWait: files another process keeps open are
// replaced by the exchange after the lease wait, and one section waits
// leaseWait in all, not per file.
// Not parallel: it sets the package's leaseWait.
func TestReplace_BusyFilesShareOneWait(t *testing.T) {
	defer func(w time.Duration) { leaseWait = w }(leaseWait)
	leaseWait = 300 * time.Millisecond
	r := newTestRepo(t)
	const n = 8
	script := ""
	for i := 0; i < n; i++ {
		name := filepath.Join(r.Dir, "f"+string(rune('a'+i))+".md")
		os.WriteFile(name, []byte("old\n"), 0o600)
		script += "exec {fd}<" + name + "; "
	}
	cmd := exec.Command("bash", "-c", script+"sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	for i := 0; i < n; i++ {
		rel := "f" + string(rune('a'+i)) + ".md"
		if _, replaced, _, err := r.replaceWorkFile(rel, func(displaced) ([]byte, filemode.FileMode, bool) {
			return []byte("new\n"), filemode.Regular, true
		}); err != nil || !replaced {
			t.Fatalf("%s: replaced=%v err=%v", rel, replaced, err)
		}
		if got, _ := os.ReadFile(filepath.Join(r.Dir, rel)); string(got) != "new\n" {
			t.Fatalf("%s = %q", rel, got)
		}
	}
	took := time.Since(start)
	r.mu.Lock()
	r.unlock()
	if took > leaseWait+n*leaseWaitSpent+time.Second {
		t.Fatalf("%d busy files took %s: each waited on its own", n, took)
	}
	t.Logf("%d busy files replaced in %s", n, took)
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
	journal := filepath.Join(r.Dir, filepath.FromSlash(journalRel))
	if err := os.Symlink(outside, journal); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.Dir, "f.md"), []byte("old\n"), 0o600)
	_, _, _, err := r.replaceWorkFile("f.md", func(displaced) ([]byte, filemode.FileMode, bool) {
		return []byte("new\n"), filemode.Regular, true
	})
	if err != nil {
		t.Fatalf("a link at the journal's name stopped the replace: %v", err)
	}
	r.journal.done()
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
