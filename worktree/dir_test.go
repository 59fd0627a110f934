package worktree_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/worktree"
)

// TestDir_SymlinkSwapNeverEscapes: while another thread swaps the folder
// notes/ with a symbolic link to a folder outside, again and again, every
// write, read, removal and listing through the Dir either acts inside the
// memory folder or fails: nothing is ever written, read or removed outside.
func TestDir_SymlinkSwapNeverEscapes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.md"), []byte("outside secret\n"), 0o600)
	os.WriteFile(filepath.Join(outside, "victim.md"), []byte("victim\n"), 0o600)
	os.Mkdir(filepath.Join(root, "notes"), 0o700)
	os.WriteFile(filepath.Join(root, "notes", "secret.md"), []byte("inside\n"), 0o600)
	os.Symlink(outside, filepath.Join(root, "swap"))
	d, err := worktree.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	var stop atomic.Bool
	var swaps atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, b := filepath.Join(root, "notes"), filepath.Join(root, "swap")
		for !stop.Load() {
			if unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	var ops, refused int
	for time.Now().Before(deadline) {
		ops++
		if _, err := d.WriteFile("notes/escape.md", []byte("escaped\n"), worktree.Regular, false); err != nil {
			refused++
		}
		if f, err := d.Read("notes/secret.md"); err == nil && f != nil && string(f.Data) == "outside secret\n" {
			t.Fatal("read a file outside the memory folder")
		}
		d.Remove("notes/victim.md")
		d.RemoveAll("notes/victim.md")
		if l, err := d.Lease("notes/secret.md", 0); err == nil {
			data, _ := l.Read()
			l.Release()
			if string(data) == "outside secret\n" {
				t.Fatal("leased a file outside the memory folder")
			}
		}
		if _, _, err := d.Exchange("notes/escape2.md", []byte("x"), worktree.Regular); err != nil {
			refused++
		}
	}
	stop.Store(true)
	<-done
	for _, name := range []string{"escape.md", "escape2.md"} {
		if _, err := os.Lstat(filepath.Join(outside, name)); err == nil {
			t.Fatalf("%s was written outside the memory folder", name)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "victim.md")); err != nil {
		t.Fatalf("a file outside was removed: %v", err)
	}
	if swaps.Load() < 100 {
		t.Fatalf("only %d swaps: the race was not run", swaps.Load())
	}
	t.Logf("%d operations, %d refused, %d swaps", ops, refused, swaps.Load())
}

// TestDir_StatAndRemoveDir: Stat describes the folder itself; RemoveDir
// removes an empty folder and nothing else — not a file, not a link (to a
// folder or not), not a folder with something in it.
func TestDir_StatAndRemoveDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	d, err := worktree.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Fatalf("Stat of the folder: %v %v", st, err)
	}
	os.Mkdir(filepath.Join(root, "empty"), 0o700)
	os.MkdirAll(filepath.Join(root, "full", "x"), 0o700)
	os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o600)
	os.Symlink(outside, filepath.Join(root, "link"))
	if err := d.RemoveDir("empty"); err != nil {
		t.Fatalf("RemoveDir of an empty folder: %v", err)
	}
	for _, rel := range []string{"full", "file", "link"} {
		if err := d.RemoveDir(rel); err == nil {
			t.Errorf("RemoveDir removed %s", rel)
		}
		if _, err := os.Lstat(filepath.Join(root, rel)); err != nil {
			t.Errorf("%s gone: %v", rel, err)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatal(err)
	}
}
