package gitmem

import (
	"log/slog"
	"time"

	"github.com/go-git/go-git/v5/storage/filesystem"

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

// objectStore is the repository's object store with the lookups that
// only the repository's walks need (entryAt, clashesAt, findPrefix, ...).
type objectStore struct{ *gitstore.Objects }

// newObjectStore opens the object store of gitDir (see gitstore.OpenObjects).
func newObjectStore(gitDir string, st *filesystem.Storage, sync bool) *objectStore {
	return &objectStore{gitstore.OpenObjects(gitDir, st, sync)}
}

// SyncFiles makes every file written so far on the repository's
// filesystem durable (one syncfs), for a writer whose file was not followed
// by a commit. A no-op with fsync off.
func (r *Repo) SyncFiles() error { return r.objs.SyncAll() }
