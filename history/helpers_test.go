package history_test

import (
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/internal/testgit"
)

var testAuthor = gitmem.Signature{Name: "agent-1", Email: "agent-1@memfsd.local"}

func git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return testgit.Run(tb, dir, args...)
}

func gitErr(dir string, args ...string) (string, error) { return testgit.Try(dir, args...) }

// fixtureDir is where the fixture repositories are built once.
func fixtureDir(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "repos"))
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// readerAt is a history.Reader of the repository whose work tree is dir,
// on an object store of its own (nothing writes beside it).
func readerAt(dir string) history.Reader {
	gitDir := filepath.Join(dir, ".git")
	st := filesystem.NewStorage(gitstore.NewGitFS(gitDir), cache.NewObjectLRUDefault())
	return history.Reader{
		Objects: gitstore.OpenObjects(gitDir, st, false), GitDir: gitDir, Branch: gitmem.DefaultBranch,
		Head:   func() (plumbing.Hash, error) { return gitstore.ReadRef(gitDir, "refs/heads/"+gitmem.DefaultBranch) },
		Locked: func(f func()) { f() },
	}
}
