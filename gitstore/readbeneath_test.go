package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memfsd/memfsd/gitstore"
)

// ReadFileBeneath reads a regular file under the folder, judges its size
// before the read, and follows no link — at the file or on the way.
func TestReadFileBeneath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "memfsd"), 0o700)
	os.WriteFile(filepath.Join(dir, "memfsd", "ok"), []byte("hello"), 0o600)
	os.WriteFile(filepath.Join(dir, "memfsd", "big"), []byte(strings.Repeat("x", 100)), 0o600)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("not yours"), 0o600)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "memfsd", "link"))
	os.Symlink(outside, filepath.Join(dir, "linkdir"))
	syscall.Mkfifo(filepath.Join(dir, "memfsd", "fifo"), 0o600)

	if b, err := gitstore.ReadFileBeneath(dir, "memfsd/ok", 10); err != nil || string(b) != "hello" {
		t.Fatalf("ok: %q %v", b, err)
	}
	if _, err := gitstore.ReadFileBeneath(dir, "memfsd/big", 99); !errors.Is(err, gitstore.ErrTooLarge) {
		t.Fatalf("over the cap: %v", err)
	}
	for _, rel := range []string{"memfsd/link", "linkdir/secret", "memfsd/fifo", "memfsd", "../" + filepath.Base(outside) + "/secret"} {
		if b, err := gitstore.ReadFileBeneath(dir, rel, 100); err == nil {
			t.Fatalf("%s read: %q", rel, b)
		} else {
			t.Logf("%s: %v", rel, err)
		}
	}
	if _, err := gitstore.ReadFileBeneath(dir, "memfsd/none", 100); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}
