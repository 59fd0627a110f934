package agent

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/worktree"
)

// DefaultMaxFileBytes is the largest file a direct write commits
// (--max-file-bytes): a bigger one is held with a reminder, so it neither
// fills the history nor delays the files written beside it.
const DefaultMaxFileBytes = 8 << 20

// maxFileBytes is the configured cap (DefaultMaxFileBytes when unset).
func (a *Agent) maxFileBytes() int64 {
	if a.cfg.MaxFileBytes > 0 {
		return a.cfg.MaxFileBytes
	}
	return DefaultMaxFileBytes
}

// perFileFailure reports an error one file's commit can cause without the
// others' failing too (a full disk for its blob, a file too large for the
// filesystem): its neighbours are then committed one by one. A held lock
// or a broken repository would stop each of them alike.
func perFileFailure(err error) bool {
	if err == nil || errors.Is(err, gitmem.ErrLocked) || errors.Is(err, gitmem.ErrNotRepository) {
		return false
	}
	return true
}

// problemOf is the write problem a failed commit of path is.
func problemOf(path string, err error) reminders.WriteProblem {
	w := reminders.WriteProblem{Path: path, Cause: reminders.CauseWriteFailed, Detail: err.Error()}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		w.Cause, w.Detail = reminders.CauseDiskFull, "no space left on the disk holding the memory"
	case errors.Is(err, syscall.EFBIG):
		w.Cause = reminders.CauseTooLarge
	}
	return w
}

// commitEach commits paths one request each, after a batch failed: the
// file that failed it fails alone (recorded in failed), the others are
// committed. The results are merged in order.
func (a *Agent) commitEach(repo *gitmem.Repo, paths []string, req func([]string) gitmem.CommitRequest, failed map[string]reminders.WriteProblem) (gitmem.CommitResult, error) {
	var all gitmem.CommitResult
	var errs []error
	// Smallest first: the file that fails the batch is most likely the
	// biggest, and the small ones should not wait on reading and packing
	// it once more.
	size := make(map[string]int64, len(paths))
	for _, p := range paths {
		_ = a.withTree(func(wt *worktree.Dir) error {
			st, err := wt.Lstat(p)
			if err == nil {
				size[p] = st.Size
			}
			return err
		})
	}
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
			if !perFileFailure(err) {
				errs = append(errs, err)
				continue
			}
			failed[p] = problemOf(p, err)
		}
	}
	return all, errors.Join(errs...)
}

// updateWriteProblems records the direct writes of one commit pass that
// were not saved (found) and forgets those of paths this pass settled
// otherwise. It returns the problems that are new (not known with that
// cause), worth a log line; a retry that fails alike is not.
func (a *Agent) updateWriteProblems(paths []string, found map[string]reminders.WriteProblem) []reminders.WriteProblem {
	a.problemsMu.Lock()
	defer a.problemsMu.Unlock()
	if a.problems == nil {
		a.problems = map[string]reminders.WriteProblem{}
	}
	for _, p := range paths {
		if _, ok := found[p]; !ok {
			delete(a.problems, p)
		}
	}
	var fresh []reminders.WriteProblem
	for p, w := range found {
		if a.problems[p].Cause != w.Cause {
			fresh = append(fresh, w)
		}
		a.problems[p] = w
	}
	return fresh
}

// writeProblems are the direct writes not saved whose file is still there,
// sorted by path.
func (a *Agent) writeProblems() []reminders.WriteProblem {
	a.problemsMu.Lock()
	list := make([]reminders.WriteProblem, 0, len(a.problems))
	for _, w := range a.problems {
		list = append(list, w)
	}
	a.problemsMu.Unlock()
	out := list[:0]
	for _, w := range list {
		if a.workExists(w.Path) {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, func(x, y reminders.WriteProblem) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// WriteProblemsError is the turn's (and a one-shot sync's) error for
// direct writes not saved (nil when none).
func WriteProblemsError(ps []reminders.WriteProblem) error {
	if len(ps) == 0 {
		return nil
	}
	parts := make([]string, len(ps))
	for i, w := range ps {
		parts[i] = w.Describe()
	}
	return fmt.Errorf("not saved: %s; the other files were committed", strings.Join(parts, ", "))
}

// AgentFacing rewrites the host paths in msg (an error's text) as the
// agent sees them: the memory folder as /memories, its view folders as
// shared/<name>, anything else under the home as <memfsd home>. Whatever
// the agent reads — a tool answer, a reminder — goes through it.
func (a *Agent) AgentFacing(msg string) string { return reminders.AgentFacing(msg, a.Dir()) }
