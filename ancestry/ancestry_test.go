package ancestry_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/ancestry"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/internal/testgit"
)

// histories builds, with the git CLI, c0 ← l1 ← l2 (local), c0 ← r1
// (remote) and an unrelated root o1, and opens the object store.
func histories(t *testing.T) (*gitstore.Objects, map[string]plumbing.Hash, string) {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) string { return testgit.Run(t, dir, args...) }
	git("init", "-q", "-b", "main")
	c := map[string]plumbing.Hash{}
	commit := func(name string) {
		git("commit", "-q", "--allow-empty", "-m", name)
		c[name] = plumbing.NewHash(git("rev-parse", "HEAD"))
	}
	commit("c0")
	commit("l1")
	commit("l2")
	git("checkout", "-q", "-b", "remote", c["c0"].String())
	commit("r1")
	git("checkout", "-q", "--orphan", "other")
	commit("o1")
	gitDir := filepath.Join(dir, ".git")
	st := filesystem.NewStorage(gitstore.NewGitFS(gitDir), cache.NewObjectLRUDefault())
	objs := gitstore.OpenObjects(gitDir, st, false)
	t.Cleanup(objs.Close)
	return objs, c, dir
}

// TestRelate_AgreesWithGit: every relation, and ahead/behind counts the
// same as git rev-list --left-right --count.
func TestRelate_AgreesWithGit(t *testing.T) {
	t.Parallel()
	objs, c, dir := histories(t)
	for _, tc := range []struct {
		local, remote string
		want          ancestry.Relation
	}{
		{"l2", "l2", ancestry.Same},
		{"l2", "c0", ancestry.Ahead},
		{"c0", "l2", ancestry.Behind},
		{"l2", "r1", ancestry.Diverged},
		{"l2", "o1", ancestry.Unrelated},
	} {
		rel, base, err := ancestry.RelateBase(objs, c[tc.local], c[tc.remote])
		if err != nil || rel != tc.want {
			t.Fatalf("%s against %s: %s, %v; want %s", tc.local, tc.remote, rel, err, tc.want)
		}
		if rel == ancestry.Diverged && base != c["c0"] {
			t.Errorf("%s against %s: met at %s, want c0", tc.local, tc.remote, base)
		}
		_, ahead, behind, err := ancestry.AheadBehind(objs, c[tc.local], c[tc.remote])
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("%d\t%d", ahead, behind)
		if want := testgit.Run(t, dir, "rev-list", "--left-right", "--count", c[tc.local].String()+"..."+c[tc.remote].String()); got != want {
			t.Errorf("%s against %s: ahead/behind %q, git says %q", tc.local, tc.remote, got, want)
		}
	}
}

func TestCommitsSince(t *testing.T) {
	t.Parallel()
	objs, c, _ := histories(t)
	got, err := ancestry.CommitsSince(objs, c["l2"], c["c0"])
	if err != nil || len(got) != 2 || got[0] != c["l1"] || got[1] != c["l2"] {
		t.Fatalf("l2 since c0: %v, %v; want l1, l2", got, err)
	}
	if _, err := ancestry.CommitsSince(objs, c["l2"], c["r1"]); !errors.Is(err, ancestry.ErrNonFastForward) {
		t.Errorf("l2 since r1: %v, want ErrNonFastForward", err)
	}
	if _, err := ancestry.CommitsSince(objs, c["l2"], c["o1"]); !errors.Is(err, ancestry.ErrUnrelatedHistory) {
		t.Errorf("l2 since o1: %v, want ErrUnrelatedHistory", err)
	}
	mine, err := ancestry.LocalOnly(objs, c["l2"], c["r1"])
	if err != nil || len(mine) != 2 || mine[0].Hash != c["l1"] || mine[1].Hash != c["l2"] {
		t.Fatalf("l2's commits r1 lacks: %v, %v; want l1, l2", mine, err)
	}
	if ok, err := ancestry.Reaches(objs, c["l2"], c["c0"]); !ok || err != nil {
		t.Errorf("l2 reaches c0: %v, %v", ok, err)
	}
	if ok, err := ancestry.Reaches(objs, c["r1"], c["l1"]); ok || err != nil {
		t.Errorf("r1 reaches l1: %v, %v", ok, err)
	}
}
