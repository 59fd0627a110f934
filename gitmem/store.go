package gitmem

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/memfsd/memfsd/gitstore"
)

// The object store, refs and git's lock protocol are package gitstore;
// these names keep gitmem's API as it was for its callers.

// DefaultLockWait is how long a write waits on a lock held by someone else
// (the git CLI, a person) before it gives up.
const DefaultLockWait = gitstore.DefaultLockWait

// DefaultStaleLockAge is the age past which a lock memfsd itself left
// behind is removed (see gitstore.DefaultStaleLockAge).
const DefaultStaleLockAge = gitstore.DefaultStaleLockAge

// ErrLocked is gitstore.ErrLocked: a lock is held by another process.
var ErrLocked = gitstore.ErrLocked

// ErrRefMoved is gitstore.ErrRefMoved: someone else moved the ref in the
// meantime of a compare-and-swap.
var ErrRefMoved = gitstore.ErrRefMoved

// ErrGCRunning is gitstore.ErrGCRunning: a git gc holds gc.pid.
var ErrGCRunning = gitstore.ErrGCRunning

// ClearStaleLocks removes the locks under gitDir a killed process left
// behind (see gitstore.ClearStaleLocks).
func ClearStaleLocks(gitDir string, maxAge time.Duration, log *slog.Logger) error {
	return gitstore.ClearStaleLocks(gitDir, maxAge, log)
}

// SyncFiles makes every file written so far on the repository's
// filesystem durable (one syncfs), for a writer whose file was not followed
// by a commit. A no-op with fsync off.
func (r *Repo) SyncFiles() error { return r.objs.SyncAll() }

// claim marks this process as a user of the repo with a shared flock on
// .git/memfsd/owner.lock (released by the kernel when the process dies).
// When no other memfsd process holds it, the locks a killed memfsd left
// behind are removed at once: they are recognisable because their inode
// still has a name in the spare folder (see linkExclusive). Locks of a live
// git are never touched, here or by ClearStaleLocks.
func (r *Repo) claim() error {
	dir := filepath.Join(r.GitDir, "memfsd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "owner.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	// A few tries: between a fork and its exec, a child of this process
	// (a git command another goroutine runs) holds every descriptor,
	// another Repo's shared lock with them, for a moment that a loaded
	// machine stretches (a torn replace was left unfinished once so).
	for try := 0; try < 5; try++ {
		if try > 0 {
			time.Sleep(time.Duration(1<<try) * time.Millisecond) // 2 … 16 ms, 30 ms in all
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			r.soleOwner = true
			r.clearDeadLocks()
			break
		}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return fmt.Errorf("claim %s: %w", r.GitDir, err)
	}
	r.owner = f
	return nil
}

// clearDeadLocks removes locks whose inode is also a spare file.
func (r *Repo) clearDeadLocks() {
	ours := gitstore.OwnLockSpares(r.GitDir)
	if len(ours) == 0 {
		return
	}
	locks := []string{filepath.Join(r.GitDir, "index.lock")}
	filepath.WalkDir(filepath.Join(r.GitDir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") {
			locks = append(locks, p)
		}
		return nil
	})
	for _, p := range locks {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if spare, mine := ours[gitstore.Inode(fi)]; mine {
			_ = os.Remove(p)
			_ = os.Remove(spare)
			r.log.Warn("removed a lock left by a killed memfsd", "path", p)
		}
	}
}
