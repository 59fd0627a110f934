package worktree_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/worktree"
)

// TestLease_OtherProcessWaits: while memfsd holds the lease, another
// process's `>>` waits, and appends to the new version once let go.
func TestLease_OtherProcessWaits(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	f := filepath.Join(root, "f.md")
	os.WriteFile(f, []byte("old\n"), 0o600)
	d := mustOpenDir(t, root)
	l, err := d.Lease("f.md", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `echo appended >> "$F"`)
	cmd.Env = append(os.Environ(), "F="+f)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the append finished while the lease was held (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if !l.BreakPending() {
		t.Fatal("no break pending while a writer waits")
	}
	if got, _ := l.Read(); string(got) != "old\n" {
		t.Fatalf("read %q", got)
	}
	if _, err := l.Write([]byte("new version\n"), false); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(f); string(got) != "new version\nappended\n" {
		t.Fatalf("file = %q", got)
	}
}

// TestLease_BusyWhileOpen: a file another process keeps open is not leased
// (ErrBusy after the wait); once it closes, it is.
func TestLease_BusyWhileOpen(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	f := filepath.Join(root, "f.md")
	os.WriteFile(f, []byte("x\n"), 0o600)
	cmd := exec.Command("bash", "-c", `exec 3>>"$F"; sleep 0.5`)
	cmd.Env = append(os.Environ(), "F="+f)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	d := mustOpenDir(t, root)
	if _, err := d.Lease("f.md", 50*time.Millisecond); !errors.Is(err, worktree.ErrBusy) {
		t.Fatalf("lease of a file open elsewhere: %v, want ErrBusy", err)
	}
	l, err := d.Lease("f.md", 5*time.Second)
	if err != nil {
		t.Fatalf("lease after the writer closed: %v", err)
	}
	l.Release()
	cmd.Wait()
}

// TestDir_NoLinksNoEscape: a symbolic link anywhere on the path, or a
// path leaving the root, is refused by Read, Lease and OpenFile; nothing
// outside is opened.
func TestDir_NoLinksNoEscape(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600)
	os.Symlink(outside, filepath.Join(root, "dirlink"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "filelink"))
	os.Mkdir(filepath.Join(root, "sub"), 0o700)
	os.WriteFile(filepath.Join(root, "sub", "ok"), []byte("ok"), 0o600)
	d := mustOpenDir(t, root)
	for _, rel := range []string{"dirlink/secret", "filelink", "../" + filepath.Base(outside) + "/secret", "sub/../../x"} {
		if f, err := d.Read(rel); err == nil && f != nil && f.Mode != worktree.Symlink {
			t.Errorf("Read(%q) read %q", rel, f.Data)
		}
		if _, err := d.Lease(rel, 0); err == nil {
			t.Errorf("Lease(%q) took it", rel)
		}
		if f, err := d.OpenFile(rel, os.O_RDONLY, 0); err == nil {
			f.Close()
			t.Errorf("OpenFile(%q) opened it", rel)
		}
	}
	if f, err := d.Read("sub/ok"); err != nil || f == nil || string(f.Data) != "ok" {
		t.Fatalf("Read(sub/ok) = %v, %v", f, err)
	}
}

func mustOpenDir(t *testing.T, root string) *worktree.Dir {
	t.Helper()
	d, err := worktree.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestProbeLeases: leases work on the test's filesystem (the CI machine's);
// the other tests mean nothing where they do not.
func TestProbeLeases(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := worktree.ProbeLeases(mustOpenDir(t, root), "."); err != nil {
		t.Fatalf("no leases on %s: %v", os.TempDir(), err)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "lease-") {
			t.Fatalf("probe left %s", e.Name())
		}
	}
}
