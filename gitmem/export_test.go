package gitmem

import (
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/indexfile"
)

// SetBeforeMove installs a hook that runs (with the repo lock held) just
// before a sync moves the branch: a seam for tests that make someone else
// commit at that moment.
func SetBeforeMove(r *Repo, f func()) { r.beforeMove = f }

// TakeGCPID takes .git/gc.pid as a repack does and returns its release.
func TakeGCPID(r *Repo) (func(), error) { return r.takeGCPID() }

// SetSplitMinEntries sets how many index entries make memfsd write a split
// index, and returns a function that puts the old value back.
func SetSplitMinEntries(n int) func() {
	old := indexfile.SplitMinEntries
	indexfile.SplitMinEntries = n
	return func() { indexfile.SplitMinEntries = old }
}

// LeaveIndexLock takes .git/index.lock as a commit does and never lets go
// of it: what a memfsd killed mid-commit leaves behind.
func LeaveIndexLock(r *Repo) error {
	lk, err := gitstore.AcquireLock(r.GitDir+"/index", r.opts.LockWait, r.spares)
	if err != nil {
		return err
	}
	return lk.Abandon()
}
