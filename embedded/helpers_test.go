package embedded_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/testgit"
)

var testAuthor = gitmem.Signature{Name: "agent-1", Email: "agent-1@memfsd.local"}

func git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return testgit.Run(tb, dir, args...)
}

func gitErr(dir string, args ...string) (string, error) { return testgit.Try(dir, args...) }

func writeFile(tb testing.TB, dir, rel, content string) {
	tb.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// fixtureDir is where the fixture repositories are built once.
func fixtureDir(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "repos"))
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}
