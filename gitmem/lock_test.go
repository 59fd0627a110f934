package gitmem_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/testgit"
	"github.com/memfsd/memfsd/retry"
)

// backdate sets path's times to age ago (past DefaultStaleLockAge).
func backdate(t *testing.T, path string, age time.Duration) {
	t.Helper()
	old := time.Now().Add(-age)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// A person's `git commit -a` (or `git commit <paths>`) holds
// .git/index.lock for as long as its editor is open. A memfsd that starts meanwhile, the lock long past the stale
// age, keeps it: its commit fails cleanly (ErrLocked, class retryable,
// the next step named) and the person's commit then succeeds, and so does
// memfsd's next one. A lock memfsd itself left (a crash) is still removed.
func TestRepo_StaleLocks(t *testing.T) {
	t.Parallel()
	t.Run("PersonsCommitWithEditorOpen", func(t *testing.T) {
		srv := gitserver.New(t, testToken)
		r := mustClone(t, srv, "editor")
		dir := t.TempDir()
		started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
		editor := filepath.Join(dir, "editor.sh")
		script := "#!/bin/sh\ntouch '" + started + "'\nwhile [ ! -e '" + release + "' ]; do sleep 0.05; done\necho \"a person's commit\" > \"$1\"\n"
		if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, r.Dir, "person.md", "written by a person\n")
		git(t, r.Dir, "add", "person.md")
		cmd := exec.Command("git", "commit", "-a", "-q") // -a (or paths): the lock is held while the editor is open
		cmd.Dir = r.Dir
		cmd.Env = append(testgit.Env(), "GIT_EDITOR="+editor)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		defer func() { // never leave the editor waiting
			os.WriteFile(release, nil, 0o600)
			<-done
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the editor never started: %s", out.String())
			}
		}
		lock := filepath.Join(r.GitDir, "index.lock")
		before, err := os.Stat(lock)
		if err != nil {
			t.Fatalf("git commit holds no index.lock with its editor open: %v", err)
		}
		backdate(t, lock, 10*time.Minute)

		// memfsd restarts while the editor is open.
		r.Close()
		r2, err := gitmem.Open(r.Dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor, LockWait: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("open with a person's lock: %v", err)
		}
		defer r2.Close()
		after, err := os.Stat(lock)
		if err != nil || !os.SameFile(before, after) {
			t.Fatalf("the person's index.lock was removed or replaced at open: %v", err)
		}
		writeFile(t, r.Dir, "mine.md", "memfsd's\n")
		_, err = r2.CommitWrite([]string{"mine.md"}, "memory: create mine.md")
		if !errors.Is(err, gitmem.ErrLocked) {
			t.Fatalf("commit with a person's lock held: %v, want ErrLocked", err)
		}
		if c := retry.ClassOf(err); c != retry.ClassRetryable {
			t.Fatalf("class %q, want retryable", c)
		}
		for _, want := range []string{"commit mine.md", "index.lock", "remove " + lock + " if no git command is running"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		}
		if _, err := os.Stat(lock); err != nil {
			t.Fatalf("memfsd's failed commit removed the person's lock: %v", err)
		}

		// The person closes the editor: git's commit goes through, and
		// memfsd's next commit too.
		os.WriteFile(release, nil, 0o600)
		if err := <-done; err != nil {
			t.Fatalf("the person's git commit: %v\n%s", err, out.String())
		}
		done <- nil // for the deferred release
		if _, err := r2.CommitWrite([]string{"mine.md"}, "memory: create mine.md"); err != nil {
			t.Fatalf("commit after the person's: %v", err)
		}
		log := git(t, r.Dir, "log", "--format=%s")
		if !strings.Contains(log, "a person's commit") || !strings.Contains(log, "memory: create mine.md") {
			t.Fatalf("log:\n%s", log)
		}
		checkClean(t, r.Dir)
	})

	t.Run("OwnLockLeftByACrash", func(t *testing.T) {
		srv := gitserver.New(t, testToken)
		r := mustClone(t, srv, "own-lock")
		// Another memfsd process keeps the repo claimed (r), so only the
		// age rule can clear the lock at the next open.
		if err := gitmem.LeaveIndexLock(r); err != nil {
			t.Fatal(err)
		}
		lock := filepath.Join(r.GitDir, "index.lock")
		backdate(t, lock, 10*time.Minute)
		r2, err := gitmem.Open(r.Dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor, LockWait: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer r2.Close()
		if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("memfsd's own stale lock kept: %v", err)
		}
		writeFile(t, r.Dir, "after.md", "after the crash\n")
		if _, err := r2.CommitWrite([]string{"after.md"}, "memory: create after.md"); err != nil {
			t.Fatalf("commit after the crash: %v", err)
		}
		checkClean(t, r.Dir)
	})
}
