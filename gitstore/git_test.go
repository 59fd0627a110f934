package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/internal/testgit"
)

// The store on its own, with git as the reader: objects written and
// flushed as a pack, a tree built by ApplyChanges, a branch moved by
// compare-and-swap with a reflog entry, all read back by git (fsck
// --strict, log, reflog, cat-file); a compare-and-swap from a stale tip
// fails with ErrRefMoved and leaves the ref; git's own index.lock holds
// AcquireLock off until it goes.
func TestStore_GitReadsWhatItWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testgit.Run(t, dir, "init", "-q", "-b", "main")
	gitDir := filepath.Join(dir, ".git")
	objs := gitstore.OpenObjects(gitDir, filesystem.NewStorage(gitstore.NewGitFS(gitDir), cache.NewObjectLRUDefault()), true)
	defer objs.Close()
	sp := gitstore.NewSpares(gitDir) // the store's packs are placed through spare files
	objs.Spares = sp

	tip := plumbing.ZeroHash
	for i, body := range []string{"first\n", "second\n"} {
		blob, err := objs.Write(plumbing.BlobObject, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		var root plumbing.Hash
		if !tip.IsZero() {
			if root, err = objs.CommitTree(tip); err != nil {
				t.Fatal(err)
			}
		}
		root, err = objs.ApplyChanges(root, []gitstore.Change{
			{Path: "notes/a.md", Hash: blob, Mode: filemode.Regular},
			{Path: "top.md", Hash: blob, Mode: filemode.Regular},
		})
		if err != nil {
			t.Fatal(err)
		}
		sig := object.Signature{Name: "memfsd", Email: "memfsd@memfsd.local", When: time.Unix(int64(1767225600+i), 0).UTC()}
		parents := []plumbing.Hash{}
		if !tip.IsZero() {
			parents = append(parents, tip)
		}
		c, err := objs.Write(plumbing.CommitObject, codec.EncodeCommit(root, parents, sig, sig, "memory: "+body))
		if err != nil {
			t.Fatal(err)
		}
		if err := objs.Flush(true); err != nil {
			t.Fatal(err)
		}
		log := &gitstore.ReflogEntry{Name: "memfsd", Email: "memfsd@memfsd.local", Msg: "commit: memory: " + strings.TrimSpace(body)}
		if err := gitstore.CASRef(gitDir, "refs/heads/main", tip, c, time.Second, true, sp, log); err != nil {
			t.Fatalf("move main: %v", err)
		}
		objs.ReleaseKept()
		tip = c
	}
	testgit.Run(t, dir, "fsck", "--strict", "--no-dangling")
	if got := testgit.Run(t, dir, "log", "--format=%s", "main"); got != "memory: second\nmemory: first" {
		t.Fatalf("git log: %q", got)
	}
	if got := testgit.Run(t, dir, "reflog", "show", "--format=%gs", "main"); got != "commit: memory: second\ncommit: memory: first" {
		t.Fatalf("git reflog: %q", got)
	}
	if got := testgit.Run(t, dir, "cat-file", "-p", "main:notes/a.md"); got != "second" {
		t.Fatalf("main:notes/a.md reads %q", got)
	}
	if keeps, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.keep")); len(keeps) != 0 {
		t.Fatalf(".keep files left after the ref moved: %v", keeps)
	}

	// A compare-and-swap from a tip that is no longer the ref's fails.
	if err := gitstore.CASRef(gitDir, "refs/heads/main", plumbing.ZeroHash, tip, time.Second, true, nil, nil); !errors.Is(err, gitstore.ErrRefMoved) {
		t.Fatalf("CAS from a stale tip: %v, want ErrRefMoved", err)
	}
	if got, err := gitstore.ReadRef(gitDir, "refs/heads/main"); err != nil || got != tip {
		t.Fatalf("main after the refused CAS: %s %v, want %s", got, err, tip)
	}

	// git's lock file is honoured: held, AcquireLock waits and fails.
	if err := os.WriteFile(filepath.Join(gitDir, "index.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gitstore.AcquireLock(filepath.Join(gitDir, "index"), 50*time.Millisecond, nil); !errors.Is(err, gitstore.ErrLocked) {
		t.Fatalf("lock over git's index.lock: %v, want ErrLocked", err)
	}
	os.Remove(filepath.Join(gitDir, "index.lock"))
	lk, err := gitstore.AcquireLock(filepath.Join(gitDir, "index"), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := testgit.Try(dir, "read-tree", "main"); err == nil || !strings.Contains(out, "index.lock") {
		t.Fatalf("git read-tree while we hold index.lock: %v %s", err, out)
	}
	lk.Rollback()
	testgit.Run(t, dir, "read-tree", "main")
}
