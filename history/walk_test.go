package history_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/internal/fixture"
)

// fixtureClone opens a clone of the 500-file, 2,000-commit fixture
// (notes/dNN/nNNNNN.md, one file changed per commit).
func fixtureClone(t *testing.T) (string, *gitmem.Repo) {
	t.Helper()
	bare, err := fixture.Bare(fixtureDir(t), 500, 2000)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "memory")
	if err := fixture.CloneCLI(bare, dir); err != nil {
		t.Fatal(err)
	}
	r, err := gitmem.Open(dir, gitmem.Remote{}, gitmem.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return dir, r
}

// TestRepo_History_FixtureMatchesGitLog: on a long history three folders
// deep, History lists what `git log -n N -- P` lists for a file, its
// folders, a path never there, one below a folder never there, and one
// below a file.
func TestRepo_History_FixtureMatchesGitLog(t *testing.T) {
	t.Parallel()
	dir, r := fixtureClone(t)
	for _, p := range []string{fixture.Path(123), fixture.Path(7), "notes/d23", "notes", "notes/none.md", "notes/d07/zz/q.md", fixture.Path(7) + "/x", "elsewhere/a.md"} {
		for _, limit := range []int{1, 20, 5000} {
			got, err := r.History(p, limit)
			if err != nil {
				t.Fatalf("History(%q, %d): %v", p, limit, err)
			}
			var want []string
			if out := git(t, dir, "log", "--format=%H", fmt.Sprintf("-n%d", limit), "--", p); out != "" {
				want = strings.Split(out, "\n")
			}
			if !slices.Equal(hashes(got), want) {
				t.Fatalf("History(%q, %d): %d commits, git log: %d\n%v\n%v", p, limit, len(got), len(want), hashes(got), want)
			}
		}
	}
}

// TestRepo_History_SkipsUnchangedFolders: a history walk compares a commit
// with its parent level by level along the path and stops at the first
// equal entry, as git's path-limited log does: for a file whose folder
// changes in 1 commit of 50, it reads about two trees per commit (the root
// and notes/, which every commit changes), not the three of a lookup of
// the whole path in every commit.
func TestRepo_History_SkipsUnchangedFolders(t *testing.T) {
	t.Parallel()
	dir, _ := fixtureClone(t)
	reads, commits, err := history.TreeReads(readerAt(dir), fixture.Path(123))
	if err != nil {
		t.Fatal(err)
	}
	if commits != 2000 {
		t.Fatalf("walked %d commits, want 2000", commits)
	}
	if max := commits * 22 / 10; reads > max {
		t.Fatalf("read %d trees for %d commits, want at most %d (2.2 per commit)", reads, commits, max)
	}
	t.Logf("%d trees read for %d commits", reads, commits)
}
