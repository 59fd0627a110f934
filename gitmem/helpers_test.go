package gitmem_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/testgit"
)

const testToken = "s3cr3t-token-for-tests"

var testAuthor = gitmem.Signature{Name: "agent-1", Email: "agent-1@memfsd.local"}

func git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return testgit.Run(tb, dir, args...)
}

func gitErr(dir string, args ...string) (string, error) { return testgit.Try(dir, args...) }

func remoteFor(srv *gitserver.Server, agent string) gitmem.Remote {
	return gitmem.Remote{
		URL:  srv.RemoteURL(agent),
		Auth: &http.BasicAuth{Username: gitserver.Username, Password: testToken},
	}
}

// mustClone clones the agent's remote into a fresh folder.
func mustClone(tb testing.TB, srv *gitserver.Server, agent string) *gitmem.Repo {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "memory")
	r, err := gitmem.Clone(context.Background(), dir, remoteFor(srv, agent), gitmem.Options{Author: testAuthor})
	if err != nil {
		tb.Fatalf("clone: %v", err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

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

// cliClone clones the agent's remote with the git CLI (token in the URL,
// only in this test peer).
func cliClone(tb testing.TB, srv *gitserver.Server, agent string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "peer")
	u := strings.Replace(srv.RemoteURL(agent), "http://", "http://"+gitserver.Username+":"+testToken+"@", 1)
	git(tb, filepath.Dir(dir), "clone", "-q", u, dir)
	return dir
}

// seedFixture makes the agent's repository on srv a copy of the fixture
// with files files and commits commits (built once under testdata/repos).
func seedFixture(tb testing.TB, srv *gitserver.Server, agent string, files, commits int) {
	tb.Helper()
	bare, err := fixture.Bare(fixtureDir(tb), files, commits)
	if err != nil {
		tb.Fatal(err)
	}
	dst := filepath.Join(srv.Root, "v1", "git", agent, "state.git")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if out, err := exec.Command("cp", "-r", bare, dst).CombinedOutput(); err != nil {
		tb.Fatalf("cp: %v %s", err, out)
	}
}
