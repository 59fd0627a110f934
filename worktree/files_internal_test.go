package worktree

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newTestFiles is the work files of a fresh folder with a .git/memfsd.
func newTestFiles(t *testing.T) *Files {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "memfsd"), 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	wf := NewFiles(d, nil, slog.New(slog.DiscardHandler))
	wf.CheckLeases()
	return wf
}

// startWriter runs a shell command on $F (the path rel in r) and waits
// until it has had time to open the file: under a held lease its open
// waits, so the command is then blocked inside open(2).
func startWriter(t *testing.T, r *Files, rel, script string) chan error {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "F="+filepath.Join(r.dir.Path(), rel))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Wait until the writer's open waits on memfsd's lease: the kernel
	// shows the lease BREAKING in /proc/locks (a fixed pause was not
	// enough for bash to get there on a loaded machine).
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(r.dir.Path(), rel), &st); err != nil {
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
	r := newTestFiles(t)
	os.WriteFile(filepath.Join(r.dir.Path(), "f.md"), []byte("old\n"), 0o600)
	var done chan error
	_, replaced, st, err := r.replaceWorkFile("f.md", func(cur Displaced) ([]byte, Mode, bool) {
		if string(cur.Data) != "old\n" {
			t.Errorf("decide saw %q", cur.Data)
		}
		done = startWriter(t, r, "f.md", `printf 'agent wrote this\n' > "$F"`)
		return []byte("new\n"), Regular, true
	})
	if err != nil || !replaced || st == nil {
		t.Fatalf("replace: replaced=%v st=%v err=%v", replaced, st, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.journal.done()
	if got, _ := os.ReadFile(filepath.Join(r.dir.Path(), "f.md")); string(got) != "agent wrote this\n" {
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
	r := newTestFiles(t)
	os.WriteFile(filepath.Join(r.dir.Path(), "f.md"), []byte("old\n"), 0o600)
	var done chan error
	_, removed, err := r.removeWorkFile("f.md", func(cur Displaced) bool {
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
	if got, _ := os.ReadFile(filepath.Join(r.dir.Path(), "f.md")); string(got) != "old\nappended\n" {
		t.Fatalf("f.md = %q", got)
	}
	// Without a writer, the file goes.
	_, removed, err = r.removeWorkFile("f.md", func(Displaced) bool { return true })
	if err != nil || !removed {
		t.Fatalf("plain remove: %v %v", removed, err)
	}
	if _, err := os.Lstat(filepath.Join(r.dir.Path(), "f.md")); !os.IsNotExist(err) {
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

// TestReplace_BusyFilesShareOneWait: files another process keeps open are
// replaced by the exchange after the lease wait, and one section waits
// leaseWait in all, not per file.
// Not parallel: it sets the package's leaseWait.
func TestReplace_BusyFilesShareOneWait(t *testing.T) {
	defer func(w time.Duration) { leaseWait = w }(leaseWait)
	leaseWait = 300 * time.Millisecond
	r := newTestFiles(t)
	const n = 8
	script := ""
	for i := 0; i < n; i++ {
		name := filepath.Join(r.dir.Path(), "f"+string(rune('a'+i))+".md")
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
		if _, replaced, _, err := r.replaceWorkFile(rel, func(Displaced) ([]byte, Mode, bool) {
			return []byte("new\n"), Regular, true
		}); err != nil || !replaced {
			t.Fatalf("%s: replaced=%v err=%v", rel, replaced, err)
		}
		if got, _ := os.ReadFile(filepath.Join(r.dir.Path(), rel)); string(got) != "new\n" {
			t.Fatalf("%s = %q", rel, got)
		}
	}
	took := time.Since(start)
	r.Done()
	if took > leaseWait+n*leaseWaitSpent+time.Second {
		t.Fatalf("%d busy files took %s: each waited on its own", n, took)
	}
	t.Logf("%d busy files replaced in %s", n, took)
}

// TestPull_OtherModeIsNeverTheFileOnDisk: a tree entry of an odd mode
// (0100664, made by an agent's git) is never taken for the file read from
// the folder, whose mode is one of git's three. A pull deleting it leaves
// it as the agent's write; a pull changing it keeps it merged. (The
// mapping of every odd mode to Regular made both match, 2026-12-07.)
func TestPull_OtherModeIsNeverTheFileOnDisk(t *testing.T) {
	wf := newTestFiles(t)
	data := []byte("one\ntwo\n")
	if err := os.WriteFile(filepath.Join(wf.dir.Path(), "odd.md"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := wf.Pull("odd.md", Update{From: blobHash(data), FromMode: Other})
	if err != nil {
		t.Fatal(err)
	}
	if got.Replaced || !got.Kept {
		t.Fatalf("pull deleting a 100664 entry: %+v; want the file kept as the agent's write", got)
	}
	if b, err := os.ReadFile(filepath.Join(wf.dir.Path(), "odd.md")); err != nil || string(b) != string(data) {
		t.Fatalf("odd.md is %q, %v; want it untouched", b, err)
	}
	if (Displaced{Existed: true, Data: data, Mode: Regular}).Is(blobHash(data), Other) {
		t.Fatal("a Regular file read from the folder is taken for a 100664 entry")
	}
}
