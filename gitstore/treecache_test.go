package gitstore_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/internal/testgit"
)

// TestObjects_TreeCacheBoundedInEntries: a folder that gains a file at
// every write (an agent creating note after note) leaves one tree per
// write, each as large as the folder. The decoded-tree cache was bounded
// only in trees (4096), so it held the square of the folder's size: the
// walls fuzz soak saw the daemon's RSS grow ~2 MiB/s past its 256 MiB cap,
// all of it tree entries kept by ApplyChanges. The cache's entries stay
// bounded, and the latest root is still cached (the next write reads it).
func TestObjects_TreeCacheBoundedInEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testgit.Run(t, dir, "init", "-q", "-b", "main")
	gitDir := filepath.Join(dir, ".git")
	objs := gitstore.OpenObjects(gitDir, filesystem.NewStorage(gitstore.NewGitFS(gitDir), cache.NewObjectLRUDefault()), true)
	defer objs.Close()

	blob, err := objs.Write(plumbing.BlobObject, []byte("a note\n"))
	if err != nil {
		t.Fatal(err)
	}
	const writes = 1500
	const maxEntries = 1 << 18 // a few MiB; unbounded, writes²/2 is 1.1M
	root := plumbing.ZeroHash
	peak := 0
	for i := range writes {
		root, err = objs.ApplyChanges(root, []gitstore.Change{
			{Path: fmt.Sprintf("note-%05d.md", i), Hash: blob, Mode: filemode.Regular},
		})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tr := range objs.Trees {
			n += len(tr.Entries)
		}
		peak = max(peak, n)
		if n > maxEntries {
			t.Fatalf("write %d: the tree cache holds %d trees with %d entries together (bound %d)", i, len(objs.Trees), n, maxEntries)
		}
	}
	if tr, ok := objs.Trees[root]; !ok || len(tr.Entries) != writes {
		t.Fatalf("the latest root is not cached with its %d entries", writes)
	}
	t.Logf("peak %d entries cached", peak)
}
