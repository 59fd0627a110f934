package testgit_test

import (
	"compress/zlib"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/testgit"
)

// The bomb is a valid zlib stream of exactly its header and zeros (its
// checksum checks), and a large one is quick to build.
func TestWriteZlibBomb(t *testing.T) {
	gitDir := t.TempDir()
	for _, zeros := range []int64{0, 10, 1 << 20, 5<<20 + 123} {
		id := testgit.WriteZlibBomb(t, gitDir, 7, zeros)
		f, err := os.Open(filepath.Join(gitDir, "objects", id[:2], id[2:]))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zlib.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, zr)
		f.Close()
		if want := int64(len("blob 7\x00")) + zeros; err != nil || n != want {
			t.Fatalf("zeros %d: inflated %d bytes, %v; want %d and a good checksum", zeros, n, err, want)
		}
		os.RemoveAll(filepath.Join(gitDir, "objects"))
	}
	start := time.Now()
	id := testgit.WriteZlibBomb(t, gitDir, 2<<30, 2<<30)
	fi, err := os.Stat(filepath.Join(gitDir, "objects", id[:2], id[2:]))
	if err != nil || fi.Size() > 4<<20 {
		t.Fatalf("a 2 GiB bomb: %v %v", fi, err)
	}
	t.Logf("a 2 GiB bomb: %d bytes on disk, built in %s", fi.Size(), time.Since(start))
}
