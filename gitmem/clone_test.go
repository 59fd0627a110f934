package gitmem_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestClone_NeverDestroys: a repository that cannot be opened is reported,
// never re-initialised or removed; an unpushed commit survives.
func TestClone_NeverDestroys(t *testing.T) {
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "keep")
	writeFile(t, r.Dir, "unpushed.md", "only here\n")
	head, err := r.CommitWrite([]string{"unpushed.md"}, "memory: create unpushed.md")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	ctx := context.Background()

	t.Run("OpenFails", func(t *testing.T) {
		memfsd := filepath.Join(r.GitDir, "memfsd")
		os.RemoveAll(memfsd)
		os.WriteFile(memfsd, []byte("in the way"), 0o600) // claim cannot make its folder
		defer os.Remove(memfsd)
		if _, err := gitmem.Clone(ctx, r.Dir, remoteFor(srv, "keep"), gitmem.Options{Author: testAuthor}); err == nil {
			t.Fatal("clone over a repository it cannot open succeeded")
		}
		if got := git(t, r.Dir, "rev-parse", "HEAD"); got != head.String() {
			t.Fatalf("HEAD = %s, want the unpushed commit %s", got, head)
		}
	})
	t.Run("NoHEAD", func(t *testing.T) {
		headFile := filepath.Join(r.GitDir, "HEAD")
		os.Rename(headFile, headFile+".aside")
		_, err := gitmem.Clone(ctx, r.Dir, remoteFor(srv, "keep"), gitmem.Options{Author: testAuthor})
		os.Rename(headFile+".aside", headFile)
		if err == nil || !strings.Contains(err.Error(), "move it away") {
			t.Fatalf("clone over a .git without HEAD: %v", err)
		}
		if got := git(t, r.Dir, "log", "-1", "--format=%s"); got != "memory: create unpushed.md" {
			t.Fatalf("last commit = %q", got)
		}
		git(t, r.Dir, "fsck", "--strict")
	})
}

// TestClone_FailedFirstCloneLeavesNothing: nothing half-made is left, and
// files written before the first clone stay.
func TestClone_FailedFirstCloneLeavesNothing(t *testing.T) {
	srv := gitserver.New(t, testToken)
	peer := cliClone(t, srv, "first")
	writeFile(t, peer, "remote.md", "from the remote\n")
	writeFile(t, peer, "both.md", "remote version\n")
	git(t, peer, "checkout", "-q", "-b", "main")
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "seed")
	git(t, peer, "push", "-q", "origin", "main")

	home := t.TempDir()
	dir := filepath.Join(home, "memory")
	writeFile(t, dir, "both.md", "written before the first clone\n")
	srv.AddFault(&gitserver.Fault{Count: 1, Status: 503})
	if _, err := gitmem.Clone(context.Background(), dir, remoteFor(srv, "first"), gitmem.Options{Author: testAuthor}); err == nil {
		t.Fatal("clone through a 503 succeeded")
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 || entries[0].Name() != "memory" {
		t.Fatalf("left behind in the parent: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); !os.IsNotExist(err) {
		t.Fatalf("a failed clone left .git: %v", err)
	}
	r, err := gitmem.Clone(context.Background(), dir, remoteFor(srv, "first"), gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if data, _ := os.ReadFile(filepath.Join(dir, "both.md")); string(data) != "written before the first clone\n" {
		t.Fatalf("a file written before the clone was replaced: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "remote.md")); string(data) != "from the remote\n" {
		t.Fatalf("remote.md = %q", data)
	}
	if st := git(t, dir, "status", "--porcelain"); st != "M both.md" {
		t.Fatalf("status = %q, want the local file as a change", st)
	}
	entries, _ = os.ReadDir(home)
	if len(entries) != 1 {
		t.Fatalf("left behind in the parent: %v", entries)
	}
	git(t, dir, "fsck", "--strict")
}
