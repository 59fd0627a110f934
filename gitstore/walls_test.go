package gitstore_test

import (
	"compress/zlib"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/internal/testgit"
)

// openStore opens the object store of a new repository at dir (git init)
// as the repository does: through gitFS, large objects left lazy.
func openStore(t *testing.T, dir string) (*gitstore.Objects, *gitstore.Refusals) {
	t.Helper()
	testgit.Run(t, dir, "init", "-q", "-b", "main")
	gitDir := filepath.Join(dir, ".git")
	refused := &gitstore.Refusals{}
	st := filesystem.NewStorageWithOptions(gitstore.NewGitFSNoting(gitDir, refused), cache.NewObjectLRU(16<<20), filesystem.Options{LargeObjectThreshold: gitstore.MaxObjectSize()})
	objs := gitstore.OpenObjects(gitDir, st, false)
	t.Cleanup(objs.Close)
	return objs, refused
}

// A zlib bomb the agent's git wrote as a loose object (issue 38): 2 GiB of
// zeros in 2.6 MB, once with a header stating 2 GiB (over the cap), once
// stating 10 bytes (it inflates past its header). Before, go-git copied a
// loose object whole into memory however far it inflated; now each read
// is refused with an error naming the object and the class, the heap does
// not grow by its size, and the refusal is noted for the status.
func TestObjects_ZlibBombRefused(t *testing.T) {
	t.Parallel()
	objs, refused := openStore(t, t.TempDir())
	for _, declared := range []int64{2 << 30, 10} {
		id := testgit.WriteZlibBomb(t, objs.GitDir, declared, 2<<30)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := objs.Blob(plumbing.NewHash(id))
		runtime.ReadMemStats(&after)
		var big *gitstore.ObjectTooLargeError
		if !errors.As(err, &big) || big.Object != id || !errors.Is(err, gitstore.ErrTooLarge) || !strings.Contains(err.Error(), "git gc") {
			t.Fatalf("read the bomb stating %d bytes: %v; want ObjectTooLargeError naming %s with a next step", declared, err, id)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Fatalf("reading the bomb stating %d bytes allocated %d MiB", declared, grew>>20)
		}
		if got := refused.List(); len(got) == 0 || !strings.Contains(got[0], id[2:]) {
			t.Fatalf("refusals %q, want the bomb named", got)
		}
	}
}

// a2's objects (a blob "a2's private note") and a1's .git: every way a1
// could lead memfsd into a2's store.
func twoStores(t *testing.T) (a1 *gitstore.Objects, refused *gitstore.Refusals, a2Git string, blob plumbing.Hash) {
	t.Helper()
	root := t.TempDir()
	a1Dir, a2Dir := filepath.Join(root, "a1"), filepath.Join(root, "a2")
	os.MkdirAll(a1Dir, 0o755)
	os.MkdirAll(a2Dir, 0o755)
	testgit.Run(t, a2Dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(a2Dir, "private.md"), []byte("a2's private note\n"), 0o600)
	blob = plumbing.NewHash(testgit.Run(t, a2Dir, "hash-object", "-w", "private.md"))
	a1, refused = openStore(t, a1Dir)
	return a1, refused, filepath.Join(a2Dir, ".git"), blob
}

// a1's fan-out folder objects/XX is a link to a2's (issue 38): the object
// is missing to a1's store (Blob, Has, the loose listing), never a2's
// bytes; O_NOFOLLOW on the last component alone read through the link.
func TestObjects_LinkedFanOutNotFollowed(t *testing.T) {
	t.Parallel()
	a1, refused, a2Git, blob := twoStores(t)
	fan := blob.String()[:2]
	if err := os.Symlink(filepath.Join(a2Git, "objects", fan), filepath.Join(a1.Dir, fan)); err != nil {
		t.Fatal(err)
	}
	data, err := a1.Blob(blob)
	if err == nil || strings.Contains(string(data), "private") || !gitstore.StalePacks(err) {
		t.Fatalf("a1 read %s through its linked objects/%s: %q, %v; want not found", blob, fan, data, err)
	}
	if a1.Has(blob) {
		t.Fatal("a1 has a2's object through the link")
	}
	if loose, err := gitstore.ListLoose(a1.Dir); err != nil || len(loose) != 0 {
		t.Fatalf("a1's loose objects: %v %v; want none", loose, err)
	}
	if got := refused.List(); len(got) == 0 || !strings.Contains(got[0], "objects/"+fan) || !strings.Contains(got[0], "symbolic link") {
		t.Fatalf("refusals %q, want objects/%s named as a link", got, fan)
	}
}

// objects/info/alternates naming a2's objects is never read: the object
// is missing to a1, and the refusal noted.
func TestObjects_AlternatesNotFollowed(t *testing.T) {
	t.Parallel()
	a1, refused, a2Git, blob := twoStores(t)
	os.MkdirAll(filepath.Join(a1.Dir, "info"), 0o755)
	if err := os.WriteFile(filepath.Join(a1.Dir, "info", "alternates"), []byte(filepath.Join(a2Git, "objects")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// git itself follows it: the file is as git would use it.
	if out := testgit.Run(t, filepath.Dir(a1.GitDir), "cat-file", "-p", blob.String()); out != "a2's private note" {
		t.Fatalf("git through alternates: %q", out)
	}
	data, err := a1.Blob(blob)
	if err == nil || strings.Contains(string(data), "private") {
		t.Fatalf("a1 read %s through alternates: %q, %v; want not found", blob, data, err)
	}
	if got := refused.List(); len(got) == 0 || !strings.Contains(got[0], "alternates") {
		t.Fatalf("refusals %q, want alternates named", got)
	}
}

// The agent rewrites a loose object in place (same inode) between memfsd's
// check of it and go-git's read: a valid object when gitFS opens and
// inflates it to check, a zlib bomb stating 10 bytes by the time the
// returned file is read. The check held only for the bytes it saw: the
// file went on to inflate 256 MiB past its header. Now what is read
// through the file is exactly what was checked, or an error.
func TestGitFS_LooseRewrittenAfterCheckRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testgit.Run(t, dir, "init", "-q", "-b", "main")
	gitDir := filepath.Join(dir, ".git")
	os.WriteFile(filepath.Join(dir, "note.md"), []byte("a valid note\n"), 0o600)
	id := testgit.Run(t, dir, "hash-object", "-w", "note.md")
	rel := "objects/" + id[:2] + "/" + id[2:]
	bombID := testgit.WriteZlibBomb(t, gitDir, 10, 256<<20)
	bomb, err := os.ReadFile(filepath.Join(gitDir, "objects", bombID[:2], bombID[2:]))
	if err != nil {
		t.Fatal(err)
	}

	f, err := gitstore.NewGitFS(gitDir).Open(rel)
	if err != nil {
		t.Fatalf("open the valid object: %v", err)
	}
	defer f.Close()
	// The agent's shell: the same inode, new bytes.
	p := filepath.Join(gitDir, filepath.FromSlash(rel))
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(f)
	var n int64
	if err == nil {
		n, err = io.Copy(io.Discard, io.LimitReader(zr, 1<<30))
	}
	if n > 1<<20 || err == nil {
		t.Fatalf("read the object rewritten after its check: %d bytes inflated, err %v; want an error and at most what was checked", n, err)
	}
	if !strings.Contains(err.Error(), "changed") {
		t.Fatalf("err %v; want it to say the object changed while read", err)
	}
}

// A delta the agent's own git packed on a packed bomb (issue 38): a blob
// of 128 MiB of zeros (its header states so: over the 64 MiB cap) and a
// delta of a few bytes on it, as OFS_DELTA and REF_DELTA, indexed by git
// index-pack. The delta's header is small, so only its base was over the
// cap, and go-git applied it by reading the base whole (ApplyDelta): 128
// MiB allocated to read a 10-byte blob. Now the pack is walked first and
// the delta refused, naming it and its base, allocating little.
func TestObjects_PackedDeltaOnBombRefused(t *testing.T) {
	t.Parallel()
	for _, ofs := range []bool{true, false} {
		objs, refused := openStore(t, t.TempDir())
		base, delta := testgit.WritePackedDeltaOnBomb(t, objs.GitDir, 128<<20, ofs)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := objs.Blob(plumbing.NewHash(delta))
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
			t.Fatalf("reading the delta (ofs %v) on the bomb allocated %d MiB", ofs, grew>>20)
		}
		var big *gitstore.ObjectTooLargeError
		if !errors.As(err, &big) || big.Object != delta || !strings.Contains(err.Error(), base) || !strings.Contains(err.Error(), "git gc") {
			t.Fatalf("read the delta (ofs %v) on the bomb %s: %v; want ObjectTooLargeError naming %s and its base, with a next step", ofs, base, err, delta)
		}
		if _, err := objs.Reader.EncodedObjectSize(plumbing.NewHash(delta)); !errors.As(err, &big) {
			t.Fatalf("size of the delta (ofs %v) on the bomb: %v, want ObjectTooLargeError", ofs, err)
		}
		if got := refused.List(); len(got) == 0 || !strings.Contains(got[0], delta) || !strings.Contains(got[0], "objects/pack/pack-") {
			t.Fatalf("refusals %q, want the delta and its pack named", got)
		}
		t.Logf("ofs %v: %v (allocated %d KiB)", ofs, err, (after.TotalAlloc-before.TotalAlloc)>>10)
	}
}

// The repack reads the packs it merges through go-git too, with no
// threshold (a big object read whole): a pack of the agent's holding a
// delta on a bomb (or the bomb) fails the repack with the too-large error,
// allocating little.
func TestWriteDeltaPack_PackedBombRefused(t *testing.T) {
	t.Parallel()
	objs, _ := openStore(t, t.TempDir())
	base, delta := testgit.WritePackedDeltaOnBomb(t, objs.GitDir, 128<<20, true)
	bg := gitstore.NewBackground()
	defer bg.Stop()
	for _, id := range []string{delta, base} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := gitstore.WriteDeltaPack(context.Background(), bg, objs.GitDir, objs.Dir, []plumbing.Hash{plumbing.NewHash(id)}, false)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
			t.Fatalf("repacking %s allocated %d MiB", id, grew>>20)
		}
		var big *gitstore.ObjectTooLargeError
		if !errors.As(err, &big) || big.Object != id {
			t.Fatalf("repack %s: %v, want ObjectTooLargeError naming it", id, err)
		}
	}
}
