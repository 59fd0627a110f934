package gitmem

import (
	"errors"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/indexfile"
)

// readIndex reads .git/index, through the cache. An index memfsd cannot
// parse (damaged, cut short, a format it does not know) or whose shared
// index is lost is rebuilt from HEAD (and written whole or over a new
// shared index at the next write), with a warning: otherwise no commit
// could ever be made again. A sparse index is refused instead (rebuilt,
// the files outside its cone would look deleted).
func (r *Repo) readIndex() (*index.Index, error) {
	ix, _, err := r.readIndexStamped()
	return ix, err
}

// readIndexStamped is readIndex with the stamp of the file read (of the
// damaged one, when the index was rebuilt from HEAD): a commit checks,
// under index.lock, that the index is still the one it started from.
func (r *Repo) readIndexStamped() (*index.Index, indexfile.Stamp, error) {
	ix, stamp, err := r.ixf.ReadStamped()
	switch {
	case err == nil:
		return ix, stamp, nil
	case errors.Is(err, index.ErrSparse):
		return nil, stamp, err
	case errors.Is(err, indexfile.ErrSharedIndexLost):
		r.log.Warn("the index links to a lost shared index; rebuilt from HEAD (staged changes in it are gone, the work tree is untouched)", "err", err)
		ix, err = r.indexFromHead()
		return ix, stamp, err
	case errors.Is(err, index.ErrFormat):
		r.log.Warn("the index cannot be read; rebuilt from HEAD (staged changes in it are gone, the work tree is untouched)", "err", err)
		ix, err = r.indexFromHead()
		return ix, stamp, err
	}
	return nil, stamp, err
}

// indexFromHead is the index rebuilt from HEAD's tree, every entry without
// stat data (so each file is hashed again once, as after `git read-tree
// HEAD`): what memfsd falls back to when .git/index cannot be read because
// its shared index is lost, or it cannot be parsed at all. A person's
// staged changes in it are lost with it; the work tree is untouched.
func (r *Repo) indexFromHead() (*index.Index, error) {
	ix := &index.Index{Version: 2, Dirty: true}
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return ix, err
	}
	files := map[string]object.TreeEntry{}
	if err := r.flattenCommit(head, files); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		ix.Set(p, files[p].Hash, files[p].Mode, nil)
	}
	return ix, nil
}

// noteIndexLock records one hold of the folder's index.lock that took d.
func (r *Repo) noteIndexLock(d time.Duration) {
	for i, b := range IndexLockBuckets {
		if d < b || i == len(IndexLockBuckets)-1 {
			r.indexLockHolds[i].Add(1)
			break
		}
	}
	for {
		cur := r.indexLockMax.Load()
		if int64(d) <= cur || r.indexLockMax.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// indexLockTimer starts timing a hold of index.lock; the func it returns
// records it.
func (r *Repo) indexLockTimer() func() {
	start := time.Now()
	return func() { r.noteIndexLock(time.Since(start)) }
}

// IndexLockBuckets are the upper bounds of IndexLockHolds' counts (the
// last counts everything longer too).
var IndexLockBuckets = [...]time.Duration{100 * time.Microsecond, 300 * time.Microsecond, time.Millisecond, 10 * time.Millisecond, time.Hour}

// IndexLockHolds counts memfsd's holds of the folder's index.lock by
// length (IndexLockBuckets) since the repo was opened.
func (r *Repo) IndexLockHolds() [len(IndexLockBuckets)]int64 {
	var out [len(IndexLockBuckets)]int64
	for i := range out {
		out[i] = r.indexLockHolds[i].Load()
	}
	return out
}

// IndexLockMax is the longest memfsd held the folder's index.lock (every
// hold: a commit's window, a pull's, a rescan's refresh) since the repo
// was opened or the last reset: git does not wait for that lock, so a
// person's git that starts inside such a hold fails.
func (r *Repo) IndexLockMax(reset bool) time.Duration {
	if reset {
		return time.Duration(r.indexLockMax.Swap(0))
	}
	return time.Duration(r.indexLockMax.Load())
}
