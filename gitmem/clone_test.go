package gitmem_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

// TestClone_NeverDestroys: a repository that cannot be opened is reported,
// never re-initialised or removed; an unpushed commit survives.
func TestClone_NeverDestroys(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestClone_SameAsGitClone: memfsd's first clone (its own pack indexer and
// bulk checkout) leaves what `git clone` leaves: the same refs, the same
// index entries with stat data git trusts, the same files byte for byte
// (an executable and a symbolic link among them), and a repository that
// passes `git fsck --strict`.
func TestClone_SameAsGitClone(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	// A long history in a soak; 2,000 commits over 500 files in the suite.
	seedFixture(t, srv, "same", soak.Int(500, 1000), soak.Int(2000, 10000))
	peer := cliClone(t, srv, "same")
	writeFile(t, peer, "tools/run.sh", "#!/bin/sh\necho hi\n")
	os.Chmod(filepath.Join(peer, "tools", "run.sh"), 0o755)
	os.Symlink("../notes/d01/n00001.md", filepath.Join(peer, "tools", "latest.md"))
	writeFile(t, peer, "a/b/c/deep.md", "deep\n")
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "exec, symlink, deep")
	git(t, peer, "push", "-q", "origin", "main")

	ours := mustClone(t, srv, "same").Dir
	theirs := cliClone(t, srv, "same")

	for _, args := range [][]string{
		{"symbolic-ref", "HEAD"},
		{"rev-parse", "HEAD", "refs/heads/main", "refs/remotes/origin/main"},
		{"ls-files", "--stage"},
		{"ls-tree", "-r", "HEAD"},
	} {
		if a, b := git(t, ours, args...), git(t, theirs, args...); a != b {
			t.Fatalf("git %v differs:\nmemfsd: %.300s\ngit clone: %.300s", args, a, b)
		}
	}
	// Stat data git trusts: diff-files compares stat only (no refresh), so
	// a wrong stat shows as a change here.
	if out := git(t, ours, "diff-files"); out != "" {
		t.Fatalf("git diff-files on memfsd's clone: %.300s", out)
	}
	if out := git(t, ours, "status", "--porcelain"); out != "" {
		t.Fatalf("git status on memfsd's clone: %.300s", out)
	}
	if out, err := exec.Command("diff", "-r", "--no-dereference", "-x", ".git", ours, theirs).CombinedOutput(); err != nil {
		t.Fatalf("work trees differ: %v %.500s", err, out)
	}
	for _, p := range []string{"tools/run.sh", "tools/latest.md", "notes/d07/n00007.md"} {
		a, _ := os.Lstat(filepath.Join(ours, p))
		b, _ := os.Lstat(filepath.Join(theirs, p))
		if a == nil || b == nil || a.Mode().Type() != b.Mode().Type() || (a.Mode()&0o100) != (b.Mode()&0o100) {
			t.Fatalf("%s: memfsd %v, git clone %v", p, a, b)
		}
	}
	git(t, ours, "fsck", "--strict")
}

// TestClone_RefusesTreesThatEscape: a remote whose tree names "..", ".git"
// or "." (git fsck calls these errors; a plain http-backend accepts them)
// is refused with ErrBadPath, first clone or pull, and nothing is written
// outside the work tree or into .git.
func TestClone_RefusesTreesThatEscape(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"..", ".git", ".GIT", "."} {
		t.Run(name, func(t *testing.T) {
			srv := gitserver.New(t, testToken)
			bare := srv.RepoDir("evil")
			blob := hashObjectIn(t, bare, "blob", []byte("[core]\n\tfsmonitor = touch /tmp/pwned\n"))
			inner := hashObjectIn(t, bare, "tree", treeEntry("100644", "config", blob))
			root := hashObjectIn(t, bare, "tree", treeEntry("40000", name, inner))
			commit := strings.TrimSpace(git(t, bare, "commit-tree", root, "-m", "evil"))
			git(t, bare, "update-ref", "refs/heads/main", commit)

			dir := filepath.Join(t.TempDir(), "nest", "memory")
			_, err := gitmem.Clone(context.Background(), dir, remoteFor(srv, "evil"), gitmem.Options{Author: testAuthor})
			if !errors.Is(err, gitmem.ErrBadPath) {
				t.Fatalf("clone of a tree naming %q: %v, want ErrBadPath", name, err)
			}
			for _, p := range []string{filepath.Join(dir, "..", "config"), filepath.Join(dir, ".git", "config")} {
				if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "fsmonitor") {
					t.Fatalf("%s was written from the remote's tree", p)
				}
			}
		})
	}
}

// hashObjectIn writes a raw object into the bare repository, unchecked.
func hashObjectIn(t *testing.T, bare, typ string, data []byte) string {
	t.Helper()
	cmd := exec.Command("git", "-C", bare, "hash-object", "-w", "--literally", "-t", typ, "--stdin")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hash-object: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// treeEntry is one raw tree entry.
func treeEntry(mode, name, hexID string) []byte {
	id, _ := hex.DecodeString(hexID)
	return append([]byte(mode+" "+name+"\x00"), id...)
}
