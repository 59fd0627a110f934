package worktree_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/memfsd/memfsd/worktree"
)

// A sparse 1 TB file in the folder (issue 38): Read, ReadLimit, a lease's
// Read and an exchange over it each judge it by fstat and refuse it as
// too large without reading it (the heap does not grow by its size), and
// the exchange leaves the agent's file where it was. Before, Read
// allocated st_size up front and the runtime died ("out of memory").
func TestDir_SparseFileTooLargeNeverRead(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "big.md")
	if err := os.WriteFile(big, []byte("head\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<40); err != nil {
		t.Fatal(err)
	}
	d, err := worktree.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	f, err := d.Read("big.md")
	var tl *worktree.TooLargeError
	if !errors.As(err, &tl) || f != nil || tl.Size != 1<<40 || tl.Max != worktree.DefaultMaxRead || tl.Stat == nil {
		t.Fatalf("Read = %v, %v; want a TooLargeError of 1 TB over the default cap", f, err)
	}
	if _, err := d.ReadLimit("big.md", 4); !errors.Is(err, worktree.ErrTooLarge) {
		t.Fatalf("ReadLimit(4) = %v, want ErrTooLarge", err)
	}
	d.SetMaxRead(1 << 20)
	if l, err := d.Lease("big.md", time.Second); err == nil {
		_, rerr := l.Read()
		l.Release()
		if !errors.Is(rerr, worktree.ErrTooLarge) {
			t.Fatalf("lease Read = %v, want ErrTooLarge", rerr)
		}
	} else if !errors.Is(err, worktree.ErrNoLease) {
		t.Fatalf("lease: %v", err)
	}
	if _, _, err := d.Exchange("big.md", []byte("memfsd's version\n"), worktree.Regular); !errors.Is(err, worktree.ErrTooLarge) {
		t.Fatalf("Exchange over it = %v, want ErrTooLarge", err)
	}
	if fi, err := os.Stat(big); err != nil || fi.Size() != 1<<40 {
		t.Fatalf("the agent's file after the exchange: %v %v; want it kept, 1 TB", fi, err)
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 64<<20 {
		t.Fatalf("reading around a 1 TB file allocated %d MiB", grew>>20)
	}

	// Small files still read whole, up to the cap exactly.
	os.WriteFile(filepath.Join(root, "ok.md"), []byte("1234"), 0o600)
	if f, err := d.ReadLimit("ok.md", 4); err != nil || string(f.Data) != "1234" {
		t.Fatalf("ReadLimit at the cap = %v, %v", f, err)
	}
}
