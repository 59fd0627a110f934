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
	"github.com/memfsd/memfsd/internal/gitserver"
)

const testToken = "s3cr3t-token-for-tests"

var testAuthor = gitmem.Signature{Name: "agent-1", Email: "agent-1@memfsd.local"}

// git runs the real git CLI in dir and returns its trimmed output.
func git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=person", "GIT_COMMITTER_EMAIL=person@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
	)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

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
