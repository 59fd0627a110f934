// Package writeproblem is the direct writes that could not be stored
// (a full disk, a file too large for the filesystem): how a failure is
// told apart from one that stops every file, the commit of a failed
// batch file by file, and the set of problems an agent remembers.
package writeproblem

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/reminders"
)

// Set is an agent's direct writes not committed (a full disk, a file
// too large), by path. Safe for concurrent use.
type Set struct {
	mu sync.Mutex
	m  map[string]reminders.WriteProblem
}

// PerFileFailure reports an error one file's commit can cause without the
// others' failing too (a full disk for its blob, a file too large for the
// filesystem): its neighbours are then committed one by one. A held lock
// or a broken repository would stop each of them alike.
func PerFileFailure(err error) bool {
	if err == nil || errors.Is(err, gitmem.ErrLocked) || errors.Is(err, gitmem.ErrNotRepository) {
		return false
	}
	return true
}

// Of is the write problem a failed commit of path is.
func Of(path string, err error) reminders.WriteProblem {
	w := reminders.WriteProblem{Path: path, Cause: reminders.CauseWriteFailed, Detail: err.Error()}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		w.Cause, w.Detail = reminders.CauseDiskFull, "no space left on the disk holding the memory"
	case errors.Is(err, syscall.EFBIG):
		w.Cause = reminders.CauseTooLarge
	}
	return w
}

// CommitEach commits paths one request each, after a batch failed: the
// file that failed it fails alone (recorded in failed), the others are
// committed, smallest first (size: a path's size in the work tree). The
// results are merged in order.
func CommitEach(repo *gitmem.Repo, paths []string, req func([]string) gitmem.CommitRequest, failed map[string]reminders.WriteProblem, size map[string]int64) (gitmem.CommitResult, error) {
	var all gitmem.CommitResult
	var errs []error
	// Smallest first: the file that fails the batch is most likely the
	// biggest, and the small ones should not wait on reading and packing
	// it once more.
	paths = slices.Clone(paths)
	slices.SortStableFunc(paths, func(x, y string) int { return cmp.Compare(size[x], size[y]) })
	for _, p := range paths {
		res, err := repo.Commit(req([]string{p}))
		all.Commits = append(all.Commits, res.Commits...)
		all.Committed = append(all.Committed, res.Committed...)
		all.Held = append(all.Held, res.Held...)
		all.Restored = append(all.Restored, res.Restored...)
		all.Skipped = append(all.Skipped, res.Skipped...)
		all.Staged = append(all.Staged, res.Staged...)
		all.Head = res.Head
		if err != nil {
			if !PerFileFailure(err) {
				errs = append(errs, err)
				continue
			}
			failed[p] = Of(p, err)
		}
	}
	return all, errors.Join(errs...)
}

// Update records the direct writes of one commit pass that
// were not saved (found) and forgets those of paths this pass settled
// otherwise. It returns the problems that are new (not known with that
// cause), worth a log line; a retry that fails alike is not.
func (s *Set) Update(paths []string, found map[string]reminders.WriteProblem) []reminders.WriteProblem {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]reminders.WriteProblem{}
	}
	for _, p := range paths {
		if _, ok := found[p]; !ok {
			delete(s.m, p)
		}
	}
	var fresh []reminders.WriteProblem
	for p, w := range found {
		if s.m[p].Cause != w.Cause {
			fresh = append(fresh, w)
		}
		s.m[p] = w
	}
	return fresh
}

// List is the direct writes not saved whose file is still there (exists),
// sorted by path.
func (s *Set) List(exists func(string) bool) []reminders.WriteProblem {
	s.mu.Lock()
	list := make([]reminders.WriteProblem, 0, len(s.m))
	for _, w := range s.m {
		list = append(list, w)
	}
	s.mu.Unlock()
	out := list[:0]
	for _, w := range list {
		if exists(w.Path) {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, func(x, y reminders.WriteProblem) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// Error is the turn's (and a one-shot sync's) error for
// direct writes not saved (nil when none).
func Error(ps []reminders.WriteProblem) error {
	if len(ps) == 0 {
		return nil
	}
	parts := make([]string, len(ps))
	for i, w := range ps {
		parts[i] = w.Describe()
	}
	return fmt.Errorf("not saved: %s; the other files were committed", strings.Join(parts, ", "))
}
