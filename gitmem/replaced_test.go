package gitmem_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/embedded"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// replaceBare deletes the bare repository at bare and creates it again
// with one unrelated commit (theirs.md), pushed from a scratch repository
// with the git CLI: letta-code #2203's server reset. Nothing of the old
// history is left on the remote.
func replaceBare(t *testing.T, bare string) {
	t.Helper()
	if err := os.RemoveAll(bare); err != nil {
		t.Fatal(err)
	}
	git(t, filepath.Dir(bare), "init", "-q", "--bare", "-b", "main", bare)
	git(t, bare, "config", "http.receivepack", "true")
	scratch := filepath.Join(t.TempDir(), "scratch")
	git(t, filepath.Dir(scratch), "init", "-q", "-b", "main", scratch)
	writeFile(t, scratch, "theirs.md", "the new server's first file\n")
	git(t, scratch, "add", "-A")
	git(t, scratch, "commit", "-q", "-m", "a fresh start")
	git(t, scratch, "push", "-q", bare, "main")
}

// remoteTreeHas checks that the remote's main holds each file with its
// content, and that the bare repository and a fresh clone of it pass git
// fsck --strict.
func remoteTreeHas(t *testing.T, bare string, files map[string]string) {
	t.Helper()
	for rel, want := range files {
		if got, err := gitErr(bare, "show", "main:"+rel); err != nil || got != strings.TrimSpace(want) {
			t.Errorf("remote %s = %q (%v), want %q", rel, got, err, want)
		}
	}
	git(t, bare, "fsck", "--strict")
	clone := filepath.Join(t.TempDir(), "check")
	git(t, filepath.Dir(clone), "clone", "-q", bare, clone)
	git(t, clone, "fsck", "--strict")
}

// TestReconcile_RemoteHistoryReplaced: after a sync, the remote's
// repository is deleted and re-created with an unrelated first commit. The
// next sync must back up the local tip, take the remote's history,
// re-apply the local files and push them, with a pack that holds every
// object the new remote lacks (nothing of the old history is there); the
// one after that pushes as usual. The one-request push used to send a
// pack built on the remembered old tip, which the new remote does not
// have: `missing necessary objects`, every time.
func TestReconcile_RemoteHistoryReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// open clones the agent's (empty) remote and returns the repo
		// and the bare repository's folder.
		open func(t *testing.T) (*gitmem.Repo, string)
	}{{
		name: "GitServer",
		open: func(t *testing.T) (*gitmem.Repo, string) {
			srv := gitserver.New(t, testToken)
			return mustClone(t, srv, "replaced"), srv.RepoDir("replaced")
		},
	}, {
		name: "Embedded",
		open: func(t *testing.T) (*gitmem.Repo, string) {
			bare := filepath.Join(t.TempDir(), "remote", "state.git")
			dir := filepath.Join(t.TempDir(), "memory")
			r, err := gitmem.Clone(ctx, dir, gitmem.Remote{URL: embedded.URL(bare)}, gitmem.Options{Author: testAuthor})
			if err != nil {
				t.Fatalf("clone: %v", err)
			}
			t.Cleanup(func() { r.Close() })
			return r, bare
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, bare := tc.open(t)
			sync := func(rel, content string) gitmem.ReconcileResult {
				t.Helper()
				writeFile(t, r.Dir, rel, content)
				if _, err := r.CommitWrite([]string{rel}, "memory: create "+rel); err != nil {
					t.Fatalf("commit %s: %v", rel, err)
				}
				res, err := r.Reconcile(ctx)
				if err != nil {
					t.Fatalf("sync after writing %s: %v", rel, err)
				}
				return res
			}
			sync("first.md", "written before the reset\n")
			sync("dir/second.md", "also before the reset\n")
			oldTip := git(t, r.Dir, "rev-parse", "HEAD")

			replaceBare(t, bare)
			res := sync("after.md", "written after the reset\n")
			if res.Relation != gitmem.Unrelated {
				t.Errorf("relation %s, want unrelated", res.Relation)
			}
			if res.Backup == "" {
				t.Fatalf("no backup ref: %+v", res)
			}
			if _, err := gitErr(r.Dir, "merge-base", "--is-ancestor", oldTip, res.Backup); err != nil {
				t.Fatalf("backup %s does not hold the old tip %s", res.Backup, oldTip)
			}
			remoteTreeHas(t, bare, map[string]string{
				"first.md":      "written before the reset",
				"dir/second.md": "also before the reset",
				"after.md":      "written after the reset",
				"theirs.md":     "the new server's first file",
			})
			if local, remote := git(t, r.Dir, "rev-parse", "HEAD"), git(t, bare, "rev-parse", "main"); local != remote {
				t.Fatalf("local %s, remote %s after the sync", local, remote)
			}

			// The next write pushes as usual (one request, on the new
			// history).
			if res := sync("later.md", "and one more\n"); res.Pushed != 1 || res.Backup != "" {
				t.Fatalf("sync after the recovery: %+v", res)
			}
			remoteTreeHas(t, bare, map[string]string{"later.md": "and one more", "after.md": "written after the reset"})
			git(t, r.Dir, "fsck", "--strict")
		})
	}
}

// TestReconcile_RemoteEmptied: the remote's repository is deleted and comes
// back empty (the server creates it again on first use). The next sync
// pushes the whole local history, which the empty remote lacks, and the one
// after pushes as usual. The one-request push used to send only the newest
// commit, on the remembered tip: `missing necessary objects` from a git
// server, every time.
func TestReconcile_RemoteEmptied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (*gitmem.Repo, string)
	}{{
		name: "GitServer",
		open: func(t *testing.T) (*gitmem.Repo, string) {
			srv := gitserver.New(t, testToken)
			return mustClone(t, srv, "emptied"), srv.RepoDir("emptied")
		},
	}, {
		name: "Embedded",
		open: func(t *testing.T) (*gitmem.Repo, string) {
			bare := filepath.Join(t.TempDir(), "remote", "state.git")
			r, err := gitmem.Clone(ctx, filepath.Join(t.TempDir(), "memory"), gitmem.Remote{URL: embedded.URL(bare)}, gitmem.Options{Author: testAuthor})
			if err != nil {
				t.Fatalf("clone: %v", err)
			}
			t.Cleanup(func() { r.Close() })
			return r, bare
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, bare := tc.open(t)
			sync := func(rel string) gitmem.ReconcileResult {
				t.Helper()
				writeFile(t, r.Dir, rel, rel+"\n")
				if _, err := r.CommitWrite([]string{rel}, "memory: create "+rel); err != nil {
					t.Fatalf("commit %s: %v", rel, err)
				}
				res, err := r.Reconcile(ctx)
				if err != nil {
					t.Fatalf("sync after writing %s: %v", rel, err)
				}
				return res
			}
			sync("first.md")
			if err := os.RemoveAll(bare); err != nil {
				t.Fatal(err)
			}
			if res := sync("after.md"); res.Pushed != 2 || res.Backup != "" {
				t.Fatalf("sync to the emptied remote: %+v, want both commits pushed", res)
			}
			remoteTreeHas(t, bare, map[string]string{"first.md": "first.md", "after.md": "after.md"})
			if res := sync("later.md"); res.Pushed != 1 {
				t.Fatalf("the next sync: %+v", res)
			}
			remoteTreeHas(t, bare, map[string]string{"later.md": "later.md"})
		})
	}
}
