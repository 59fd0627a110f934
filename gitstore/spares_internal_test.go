package gitstore

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSpares_AnotherLiveProcessKeepsItsOwn: a second memfsd process on the
// same repository (a one-shot `memfsd sync` beside the daemon) neither
// uses nor removes the spares of the live one; its locks come from spares
// of its own, and the live process's take and locks keep working (issue
// 27: "take .git/index.lock: open spare file: ... no such file").
func TestSpares_AnotherLiveProcessKeepsItsOwn(t *testing.T) {
	t.Parallel()
	gitDir := t.TempDir()
	daemon := NewSpares(gitDir) // this process: alive
	var theirs []string
	for range 8 {
		name, err := daemon.create()
		if err != nil {
			t.Fatal(err)
		}
		daemon.give(name)
		theirs = append(theirs, name)
	}

	oneShot := NewSpares(gitDir)
	oneShot.self = procOwner{Pid: daemon.self.Pid, Start: daemon.self.Start + 1} // another process
	oneShot.Start()
	defer oneShot.Stop()
	for _, n := range oneShot.names {
		t.Errorf("the one-shot adopted the live daemon's spare %s", filepath.Base(n))
	}
	for range 4 {
		l, err := AcquireLock(filepath.Join(gitDir, "index"), time.Second, oneShot)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(filepath.Base(l.spare), sparePrefix(oneShot.self)) {
			t.Errorf("the one-shot's lock is the spare %s, not one of its own", filepath.Base(l.spare))
		}
		l.Rollback()
	}
	for _, n := range theirs {
		if _, err := os.Stat(n); err != nil {
			t.Errorf("the live daemon's spare is gone: %v", err)
		}
	}
	for range len(theirs) {
		l, err := AcquireLock(filepath.Join(gitDir, "index"), time.Second, daemon)
		if err != nil {
			t.Fatalf("the daemon's lock after the one-shot ran: %v", err)
		}
		l.Rollback()
	}
}

// TestSpares_DeadProcessSparesAdopted: the spares of a process that is
// gone (a kill -9; its pid may even be reused) are taken over under this
// process's name; the spare of a lock it held stays for ClearStaleLocks.
func TestSpares_DeadProcessSparesAdopted(t *testing.T) {
	t.Parallel()
	gitDir := t.TempDir()
	me := thisProcess()
	dead := procOwner{Pid: me.Pid, Start: me.Start + 7} // same pid, another start: gone
	dir := filepath.Join(gitDir, "memfsd", "spare")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, sparePrefix(dead)+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	locked := filepath.Join(dir, sparePrefix(dead)+"9")
	if err := os.WriteFile(locked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(locked, filepath.Join(gitDir, "index.lock")); err != nil {
		t.Fatal(err)
	}
	sp := NewSpares(gitDir)
	sp.Start()
	defer sp.Stop()
	if len(sp.names) != 3 {
		t.Fatalf("adopted %d spares of the dead process, want 3", len(sp.names))
	}
	for _, n := range sp.names {
		if !strings.HasPrefix(filepath.Base(n), sparePrefix(me)) {
			t.Errorf("adopted spare %s keeps the dead process's name", filepath.Base(n))
		}
	}
	if _, err := os.Stat(locked); err != nil {
		t.Errorf("the dead process's lock spare was removed: %v", err)
	}
	if err := ClearStaleLocks(gitDir, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(gitDir, "index.lock")); err == nil {
		t.Error("the dead process's index.lock was not cleared")
	}
}

// A file the agent put where the spare folder belongs is removed and the
// folder made again: every commit failed "not a directory" for good.
func TestSpares_FolderReplacedByAFile(t *testing.T) {
	t.Parallel()
	gitDir := t.TempDir()
	s := NewSpares(gitDir)
	if err := os.MkdirAll(filepath.Join(gitDir, "memfsd"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitDir, "memfsd", "spare"), []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, name, err := s.take()
	if err != nil {
		t.Fatalf("take with a file where the spare folder belongs: %v", err)
	}
	f.Close()
	if fi, err := os.Lstat(filepath.Dir(name)); err != nil || !fi.IsDir() {
		t.Fatalf("spare folder: %v %v", fi, err)
	}
}

// TestLockedError_NamesTheRunningMemfsd: a lock another running memfsd
// holds (the daemon, while a one-shot command waits on it; issue 39: the
// message advised removing it) is named as that process's, never said
// to be removable; a lock of no memfsd's still gets git's advice.
func TestLockedError_NamesTheRunningMemfsd(t *testing.T) {
	t.Parallel()
	gitDir := t.TempDir()
	holder := NewSpares(gitDir)
	holder.self = procOwner{Pid: os.Getppid()} // another process, alive
	l, err := AcquireLock(filepath.Join(gitDir, "index"), time.Second, holder)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Rollback()
	waiter := NewSpares(gitDir)
	_, err = AcquireLock(filepath.Join(gitDir, "index"), 30*time.Millisecond, waiter)
	if err == nil {
		t.Fatal("took a held lock")
	}
	msg := err.Error()
	if !strings.Contains(msg, "memfsd pid "+strconv.Itoa(os.Getppid())) || !strings.Contains(msg, "do not remove") || strings.Contains(msg, "if no git command is running") {
		t.Errorf("a lock a running memfsd holds: %s", msg)
	}
	t.Log(msg)
	var s interface{ NextStep() string }
	if !errors.As(err, &s) || strings.Contains(s.NextStep(), "remove") && !strings.Contains(s.NextStep(), "nothing to remove") {
		t.Errorf("next step of a lock a running memfsd holds: %v", s)
	}

	// A daemon's start-up check of stale locks keeps it, and says whose.
	var logs bytes.Buffer
	if err := ClearStaleLocks(gitDir, 0, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "index.lock")); err != nil {
		t.Errorf("the running memfsd's lock was removed: %v", err)
	}
	if !strings.Contains(logs.String(), "held by another memfsd process that is running") || strings.Contains(logs.String(), "remove it") {
		t.Errorf("ClearStaleLocks on a lock a running memfsd holds: %s", logs.String())
	}

	other := filepath.Join(gitDir, "HEAD.lock") // git's own: no spare behind it
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLock(filepath.Join(gitDir, "HEAD"), 30*time.Millisecond, waiter)
	if err == nil || !strings.Contains(err.Error(), "remove "+other+" if no git command is running") {
		t.Errorf("a lock of git's: %v", err)
	}
}

// TestSpares_LinkedFolderNeverWrittenThrough: the agent makes its
// .git/memfsd/spare (or .git/memfsd) a link to a folder outside its .git
// (another agent's spare folder, say). memfsd lists nothing through it
// (no dead process's spare adopted, no lock there counted as memfsd's or
// as a live memfsd's) and makes, writes and truncates no spare through it:
// the link is replaced by a folder of its own.
func TestSpares_LinkedFolderNeverWrittenThrough(t *testing.T) {
	t.Parallel()
	for _, linked := range []string{"memfsd/spare", "memfsd"} {
		t.Run(strings.ReplaceAll(linked, "/", "_"), func(t *testing.T) {
			gitDir := filepath.Join(t.TempDir(), ".git")
			outside := t.TempDir()
			me := thisProcess()
			dead := procOwner{Pid: me.Pid, Start: me.Start + 7}
			// What lies outside, as seen through the link.
			spareOut := outside
			if linked == "memfsd" {
				spareOut = filepath.Join(outside, "spare")
			}
			if err := os.MkdirAll(spareOut, 0o700); err != nil {
				t.Fatal(err)
			}
			free := filepath.Join(spareOut, sparePrefix(dead)+"1")
			if err := os.WriteFile(free, []byte("another agent's bytes"), 0o644); err != nil {
				t.Fatal(err)
			}
			lockSpare := filepath.Join(spareOut, sparePrefix(me)+"2") // a live memfsd's lock, outside
			if err := os.WriteFile(lockSpare, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			deadLock := filepath.Join(spareOut, sparePrefix(dead)+"3")
			if err := os.WriteFile(deadLock, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(gitDir, linked)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(gitDir, linked)); err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(gitDir, "index.lock")
			if err := os.Link(lockSpare, lock); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(deadLock, filepath.Join(gitDir, "HEAD.lock")); err != nil {
				t.Fatal(err)
			}

			fi, err := os.Lstat(lock)
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := lockHolder(gitDir, fi); ok {
				t.Errorf("a lock linked to a file outside the .git (through the linked %s) was taken for live memfsd pid %d's", linked, o.Pid)
			}
			if ours := OwnLockSpares(gitDir); len(ours) != 0 {
				t.Errorf("spares listed through the linked %s: %v", linked, ours)
			}

			sp := NewSpares(gitDir)
			sp.Start()
			defer sp.Stop()
			if len(sp.names) != 0 {
				t.Errorf("adopted through the linked %s: %v", linked, sp.names)
			}
			for range 3 {
				f, name, err := sp.take()
				if err != nil {
					t.Fatalf("take a spare with %s linked: %v", linked, err)
				}
				f.Write([]byte("memfsd's bytes"))
				f.Close()
				if fi, err := os.Lstat(filepath.Join(gitDir, "memfsd", "spare", filepath.Base(name))); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("the spare %s is not a file in the .git's own spare folder: %v", name, err)
				}
			}
			for _, d := range []string{"memfsd", "memfsd/spare"} {
				if fi, err := os.Lstat(filepath.Join(gitDir, d)); err != nil || !fi.IsDir() {
					t.Errorf(".git/%s is not a folder after take: %v", d, err)
				}
			}
			ents, err := os.ReadDir(spareOut)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 3 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("files outside the .git after take (written through the link): %v, want the 3 put there", names)
			}
			if data, err := os.ReadFile(free); err != nil || string(data) != "another agent's bytes" {
				t.Errorf("the file outside was changed or moved: %q, %v", data, err)
			}
		})
	}
}
