package main_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// replaceRemote deletes the bare repository at bare and creates it again
// with one unrelated commit (theirs.md), pushed from a scratch repository
// with the git CLI: letta-code #2203's server reset, where nothing of the
// old history is left on the remote.
func replaceRemote(t *testing.T, bare string) {
	t.Helper()
	if err := os.RemoveAll(bare); err != nil {
		t.Fatal(err)
	}
	git(t, "", "init", "-q", "--bare", "-b", "main", bare)
	git(t, bare, "config", "http.receivepack", "true")
	scratch := filepath.Join(t.TempDir(), "scratch")
	git(t, "", "init", "-q", "-b", "main", scratch)
	os.WriteFile(filepath.Join(scratch, "theirs.md"), []byte("the new server's first file\n"), 0o600)
	git(t, scratch, "add", "-A")
	git(t, scratch, "commit", "-q", "-m", "a fresh start")
	git(t, scratch, "push", "-q", bare, "main")
}

// remoteHolds checks the remote's main has each file with its content, and
// that the bare repository and a fresh clone of it pass git fsck --strict.
func remoteHolds(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	for rel, want := range files {
		if got, err := gitTry(bare, "show", "main:"+rel); err != nil || got != want {
			t.Errorf("remote %s = %q (%v), want %q", rel, got, err, want)
		}
	}
	git(t, bare, "fsck", "--strict")
	clone := filepath.Join(t.TempDir(), "check")
	git(t, "", "clone", "-q", bare, clone)
	git(t, clone, "fsck", "--strict")
}

// TestSync_RemoteHistoryReplaced: `memfsd sync` after the remote's
// repository was deleted and re-created with an unrelated first commit
// backs up the local tip, re-applies the local files on the new history
// and pushes them (it failed `permanent: missing necessary objects` every
// time against a git server: the one-request push sent a pack built on the
// old remote tip). Against the test server and the embedded default.
func TestSync_RemoteHistoryReplaced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// remote gives the sync's extra flags and the bare repository.
		remote func(t *testing.T, home string) ([]string, string)
	}{{
		name: "GitServer",
		remote: func(t *testing.T, home string) ([]string, string) {
			srv := gitserver.New(t, token)
			return []string{"--base-url", srv.URL}, srv.RepoDir("cli")
		},
	}, {
		name: "Embedded",
		remote: func(t *testing.T, home string) ([]string, string) {
			return nil, filepath.Join(home, "remote", "v1", "git", "cli", "state.git")
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			flags, bare := tc.remote(t, home)
			sync := func(what string) {
				t.Helper()
				cmd := exec.Command(binPath, append([]string{"sync", "--agent", "cli", "--home", home,
					"--retry-initial", "10ms", "--retry-max", "20ms", "--retry-budget", "100ms"}, flags...)...)
				cmd.Env = append(withoutBaseURL(os.Environ()), "MEMFSD_TOKEN="+token)
				out, err := cmd.CombinedOutput()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != 0 && code != 3 {
					t.Fatalf("sync %s: exit %d\n%s", what, code, out)
				}
			}
			dir := memDir(home, "cli")
			sync("first")
			os.WriteFile(filepath.Join(dir, "before.md"), []byte("written before the reset\n"), 0o600)
			sync("a write")

			replaceRemote(t, bare)
			os.WriteFile(filepath.Join(dir, "after.md"), []byte("written after the reset\n"), 0o600)
			sync("after the remote was replaced")
			remoteHolds(t, bare, map[string]string{
				"before.md": "written before the reset",
				"after.md":  "written after the reset",
				"theirs.md": "the new server's first file",
			})
			if backups := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/memfsd/backup/"); backups == "" {
				t.Fatal("no backup ref")
			}
			os.WriteFile(filepath.Join(dir, "later.md"), []byte("and one more\n"), 0o600)
			sync("the next write")
			remoteHolds(t, bare, map[string]string{"later.md": "and one more"})
			if local, remote := git(t, dir, "rev-parse", "HEAD"), git(t, bare, "rev-parse", "main"); local != remote {
				t.Fatalf("local %s, remote %s", local, remote)
			}
		})
	}
}

// withoutBaseURL drops the base URL variables, so that no flag means the
// embedded remote whatever the environment running the tests says.
func withoutBaseURL(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "MEMFSD_BASE_URL=") && !strings.HasPrefix(e, "LETTA_MEMFS_BASE_URL=") {
			out = append(out, e)
		}
	}
	return out
}

// TestRun_RemoteHistoryReplaced: the daemon's turn after the remote's
// repository was replaced with an unrelated history recovers and pushes
// the local files (the same one-request push as memfsd sync), and the
// next turn pushes as usual.
func TestRun_RemoteHistoryReplaced(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "rh")
	dir := memDir(home, "rh")
	write := func(rel, content string) {
		t.Helper()
		before := commitCount(t, dir, "HEAD")
		os.WriteFile(filepath.Join(dir, rel), []byte(content+"\n"), 0o600)
		waitFor(t, 10*time.Second, rel+" committed", func() bool { return commitCount(t, dir, "HEAD") > before })
	}
	write("before.md", "written before the reset")
	if tr := p.turn("rh"); tr.Outcome != "pushed" {
		t.Fatalf("first turn = %+v", tr)
	}

	replaceRemote(t, srv.RepoDir("rh"))
	write("after.md", "written after the reset")
	if tr := p.turn("rh"); tr.Outcome != "pushed" && tr.Outcome != "conflict" {
		t.Fatalf("turn after the remote was replaced = %+v", tr)
	}
	remoteHolds(t, srv.RepoDir("rh"), map[string]string{
		"before.md": "written before the reset",
		"after.md":  "written after the reset",
		"theirs.md": "the new server's first file",
	})
	write("later.md", "and one more")
	if tr := p.turn("rh"); tr.Outcome != "pushed" || tr.Status.State != "clean" || tr.Status.Head != tr.Status.RemoteHead {
		t.Fatalf("the next turn = %+v", tr)
	}
	remoteHolds(t, srv.RepoDir("rh"), map[string]string{"later.md": "and one more"})
}
