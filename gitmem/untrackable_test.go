package gitmem_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/worktree"
)

// TestRepo_UntrackablePathsSkipped: the commit pipeline and the scan leave
// out what git cannot track — a .git file or folder below the root in any
// case, a name Windows reads as .git — and commit the rest (a name like
// memfsd's old temporary files, .memfsd-tmp-*, included); memfsd's own
// .git at the root silently. Before, one such path
// failed the whole commit with "bad path", and the scan handed .GIT/x and
// sub/.git (a file) to it.
func TestRepo_UntrackablePathsSkipped(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "agent-1")
	seed(t, r)
	writeFile(t, r.Dir, "a.md", "a\n")
	writeFile(t, r.Dir, "sub/.git", "gitdir: ../elsewhere\n")
	writeFile(t, r.Dir, "sub/b.md", "b\n")
	writeFile(t, r.Dir, ".GIT/x", "x\n")
	writeFile(t, r.Dir, "in/.Git/config", "[core]\n")
	writeFile(t, r.Dir, "w/git~1", "w\n")
	writeFile(t, r.Dir, "sub/.memfsd-tmp-7", "a file like any other\n") // issue 27

	sc, err := r.ScanWork()
	if err != nil {
		t.Fatal(err)
	}
	var dirty, skipped []string
	for _, d := range sc.Dirty {
		dirty = append(dirty, d.Path)
	}
	for _, s := range sc.Skipped {
		skipped = append(skipped, s.Path)
		if s.Reason == "" {
			t.Errorf("%s skipped with no reason", s.Path)
		}
	}
	if want := []string{"a.md", "sub/.memfsd-tmp-7", "sub/b.md"}; !slices.Equal(dirty, want) {
		t.Fatalf("dirty = %v, want %v", dirty, want)
	}
	if want := []string{".GIT", "in/.Git", "sub/.git", "w/git~1"}; !slices.Equal(skipped, want) {
		t.Fatalf("skipped = %v, want %v", skipped, want)
	}

	// The pipeline, handed everything a watcher might see.
	res, err := r.Commit(gitmem.CommitRequest{
		Paths:   []string{".GIT/x", ".git/config", "a.md", "in/.Git/config", "in/.Git", "sub/.git", "sub/.memfsd-tmp-7", "sub/b.md", "w/git~1"},
		Message: func(v gitmem.PathView) string { return "memory: " + v.Kind + " " + v.Path },
	})
	if err != nil {
		t.Fatalf("commit with untrackable paths among the others: %v", err)
	}
	if want := []string{"a.md", "sub/.memfsd-tmp-7", "sub/b.md"}; !slices.Equal(res.Committed, want) {
		t.Fatalf("committed %v, want %v", res.Committed, want)
	}
	skipped = skipped[:0]
	for _, s := range res.Skipped {
		skipped = append(skipped, s.Path)
	}
	if want := []string{".GIT", "in/.Git", "sub/.git", "w/git~1"}; !slices.Equal(skipped, want) {
		t.Fatalf("pipeline skipped %v, want %v (each once, memfsd's own silently)", skipped, want)
	}
	if _, err := r.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	files := git(t, srv.RepoDir("agent-1"), "ls-tree", "-r", "--name-only", "main")
	if files != "a.md\nsub/.memfsd-tmp-7\nsub/b.md\nsystem/persona.md" {
		t.Fatalf("remote files:\n%s", files)
	}
	git(t, srv.RepoDir("agent-1"), "fsck", "--strict")

	// A single act (a memory-tool command) is all or nothing: refused.
	_, err = r.CommitWrite([]string{"a.md", "sub/.git"}, "memory: both")
	if !errors.Is(err, gitmem.ErrBadPath) || !errors.Is(err, worktree.ErrUntrackable) {
		t.Fatalf("CommitWrite of an untrackable path: %v, want ErrBadPath", err)
	}
}

// TestRepo_GitlinkFromRemote: a tree from the remote holding a gitlink
// (mode 160000: a submodule someone committed elsewhere) neither stops a
// first clone, a fast-forward nor a replay: the gitlink stays in the tree
// memfsd pushes, untouched, and memfsd writes nothing for it.
func TestRepo_GitlinkFromRemote(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "agent-1")
	seed(t, r)

	// Another writer commits a gitlink and a file.
	peer := cliClone(t, srv, "agent-1")
	sub := git(t, peer, "rev-parse", "HEAD") // any commit id will do
	git(t, peer, "update-index", "--add", "--cacheinfo", "160000,"+sub+",vendor/lib")
	writeFile(t, peer, "peer.md", "peer\n")
	git(t, peer, "add", "peer.md")
	git(t, peer, "commit", "-qm", "add a submodule")
	git(t, peer, "push", "-q", "origin", "HEAD:main")

	// Diverged: a local commit is replayed onto the peer's.
	commitFile(t, r, "local.md", "local\n", "memory: create local.md")
	if _, err := r.Reconcile(context.Background()); err != nil {
		t.Fatalf("reconcile over a gitlink: %v", err)
	}
	bare := srv.RepoDir("agent-1")
	tree := git(t, bare, "ls-tree", "-r", "main")
	if !strings.Contains(tree, "160000 commit "+sub+"\tvendor/lib") || !strings.Contains(tree, "local.md") || !strings.Contains(tree, "peer.md") {
		t.Fatalf("remote tree after the replay:\n%s", tree)
	}
	if _, err := os.Lstat(filepath.Join(r.Dir, "vendor", "lib", ".git")); err == nil {
		t.Fatal("memfsd made a .git for the gitlink")
	}

	// A first clone of it, then a write and a fast-forward from the peer.
	r2 := mustClone(t, srv, "agent-1")
	git(t, peer, "pull", "-q", "--no-rebase", "origin", "main")
	writeFile(t, peer, "peer2.md", "peer 2\n")
	git(t, peer, "add", "peer2.md")
	git(t, peer, "commit", "-qm", "more")
	git(t, peer, "push", "-q", "origin", "HEAD:main")
	if _, err := r2.Reconcile(context.Background()); err != nil {
		t.Fatalf("fast-forward over a gitlink: %v", err)
	}
	commitFile(t, r2, "r2.md", "r2\n", "memory: create r2.md")
	if _, err := r2.Reconcile(context.Background()); err != nil {
		t.Fatalf("push over a gitlink: %v", err)
	}
	tree = git(t, bare, "ls-tree", "-r", "main")
	if !strings.Contains(tree, "160000 commit "+sub+"\tvendor/lib") || !strings.Contains(tree, "r2.md") || !strings.Contains(tree, "peer2.md") {
		t.Fatalf("remote tree after the second clone's push:\n%s", tree)
	}
	if sc, err := r2.ScanWork(); err != nil || len(sc.Dirty) != 0 {
		t.Fatalf("the gitlink shows as dirty: %+v %v", sc, err)
	}
	git(t, bare, "fsck", "--strict")
}
