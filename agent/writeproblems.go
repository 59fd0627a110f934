package agent

import (
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/worktree"
	"github.com/memfsd/memfsd/writeproblem"
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

// commitEach commits paths one request each, after a batch failed: the
// file that failed it fails alone (recorded in failed), the others are
// committed (writeproblem.CommitEach), smallest first.
func (a *Agent) commitEach(repo *gitmem.Repo, paths []string, req func([]string) gitmem.CommitRequest, failed map[string]reminders.WriteProblem) (gitmem.CommitResult, error) {
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
	return writeproblem.CommitEach(repo, paths, req, failed, size)
}

// updateWriteProblems records the direct writes of one commit pass that
// were not saved (found) and forgets those this pass settled otherwise;
// it returns the new ones (writeproblem.Set.Update).
func (a *Agent) updateWriteProblems(paths []string, found map[string]reminders.WriteProblem) []reminders.WriteProblem {
	return a.problems.Update(paths, found)
}

// writeProblems are the direct writes not saved whose file is still there,
// sorted by path.
func (a *Agent) writeProblems() []reminders.WriteProblem { return a.problems.List(a.workExists) }

// WriteProblemsError is the turn's (and a one-shot sync's) error for
// direct writes not saved (nil when none).
func WriteProblemsError(ps []reminders.WriteProblem) error { return writeproblem.Error(ps) }

// AgentFacing rewrites the host paths in msg (an error's text) as the
// agent sees them: the memory folder as /memories, its view folders as
// shared/<name>, anything else under the home as <memfsd home>. Whatever
// the agent reads — a tool answer, a reminder — goes through it.
func (a *Agent) AgentFacing(msg string) string { return reminders.AgentFacing(msg, a.Dir()) }
