package agent

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/blockset"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/status"
	"github.com/memfsd/memfsd/worktree"
)

// blocksFile, beside operatorFile and as far out of the agent's reach,
// holds the operator's block-set approvals (SPEC §8: bound to the remote
// tip they were made against, ended when their content is on the remote
// or superseded there).
const blocksFile = "operator-blocks.json"

// BlockSetOutcome is what became of the latest block set of a path
// (blockset.Outcome).
type BlockSetOutcome = blockset.Outcome

func (a *Agent) blocksPath() string {
	return filepath.Join(a.folder, blocksFile)
}

// approveBlock records that the operator set rel to content against the
// remote tip base (blockset.Book.Approve).
func (a *Agent) approveBlock(rel string, content []byte, base, prev plumbing.Hash) error {
	return a.blockSets.Approve(a.blocksPath(), rel, content, base, prev)
}

// liveBlockApprovals returns, for a push starting at remote, the blob id
// each path's approval lets through, ending those that ended
// (blockset.Book.Live).
func (a *Agent) liveBlockApprovals(remote gitmem.OutgoingRemote) (map[string]string, error) {
	return a.blockSets.Live(a.blocksPath(), remote, a.log)
}

// BlockSetOutcome reports what became of the latest block set of rel that
// this process made or saw end: pending, delivered or superseded (with the
// reason). A path with an approval on record is pending.
func (a *Agent) BlockSetOutcome(rel string) BlockSetOutcome {
	var remoteFile func(string) ([]byte, bool, error)
	if repo := a.repository(); repo != nil {
		remoteFile = repo.RemoteFile
	}
	return a.blockSets.Outcome(a.blocksPath(), rel, remoteFile)
}

// reapplyOwedBlocks commits again each operator's block set that is on
// record (not on the remote yet) and that the local history lost: HEAD
// does not have its content at its path, nor does the remote's tip as last
// known (the agent's shell reset the branch past the commit, or committed
// over it). The operator's change is owed until a push carries it (SPEC
// §13); the push that follows judges it as any block set's (bound to its
// remote tip, superseded if the path changed there first). Local steps
// only, under writeMu: no network. It returns how many it committed.
func (a *Agent) reapplyOwedBlocks(repo *gitmem.Repo) (int, error) {
	owed := a.blockSets.Pending(a.blocksPath())
	if len(owed) == 0 {
		return 0, nil
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if a.repository() != repo { // a rebuild of the .git swapped it
		return 0, nil
	}
	n := 0
	for _, o := range owed {
		has := func(file func(string) ([]byte, bool, error)) (bool, error) {
			data, ok, err := file(o.Path)
			return ok && plumbing.ComputeHash(plumbing.BlobObject, data) == o.Blob, err
		}
		if ok, err := has(repo.HeadFile); err != nil || ok {
			if err != nil {
				return n, fmt.Errorf("operator's block set %s: read HEAD's version: %w", o.Path, err)
			}
			continue // in the local history: the push carries it
		}
		if ok, err := has(repo.RemoteFile); err == nil && ok {
			continue // delivered: the next push's check ends the approval
		}
		if remoteChangedSince(repo, o.Base, o.Path) {
			// The path changed on the remote since the approval (another
			// writer, or the operator's own clone after the block set was
			// delivered): not lost by the agent, superseded. The next
			// push's check ends the approval; committing the old content
			// again would undo the newer version (then be restored as
			// the agent's read-only change).
			continue
		}
		content := o.Content
		if content == nil { // a record from before the content was kept
			data, err := repo.Blob(o.Blob)
			if err != nil || plumbing.ComputeHash(plumbing.BlobObject, data) != o.Blob {
				a.log.Warn("operator's block set lost from the local history and its content is gone: set the block again", "path", o.Path)
				a.blockSets.Reapplied(o.Path, "the agent's history lost it and its content is not kept (a record from an older memfsd): set the block again")
				continue
			}
			content = data
		}
		err := a.withTree(func(wt *worktree.Dir) error {
			_, err := wt.WriteFile(o.Path, content, worktree.Regular, !a.cfg.NoFsync)
			return err
		})
		if err != nil {
			return n, fmt.Errorf("operator's block set %s: write it again: %w (if the agent put a link on the way, remove it)", o.Path, err)
		}
		head, err := repo.CommitOperator([]string{o.Path}, "memfsd: operator set "+o.Path+" again (the agent's history lost it)")
		if errors.Is(err, gitmem.ErrNothingToCommit) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("operator's block set %s: commit it again: %w", o.Path, err)
		}
		n++
		a.log.Warn("operator's block set was lost from the local history (the agent's branch reset past it, or its commit over it): committed again, pushed with this sync", "path", o.Path, "commit", head.String())
		a.blockSets.Reapplied(o.Path, fmt.Sprintf("the agent's history lost it (its branch reset past the commit, or its own commit over it); committed again as %s, not on the remote yet", short(head)))
	}
	return n, nil
}

// remoteChangedSince reports whether path at the remote's tip as last
// known differs from path at base, the remote tip an approval is bound to
// (false when base is zero or either cannot be read: then the approval is
// taken as owed).
func remoteChangedSince(repo *gitmem.Repo, base plumbing.Hash, path string) bool {
	if base.IsZero() {
		return false
	}
	var was plumbing.Hash
	f, err := repo.FileAt(path, base.String())
	switch {
	case errors.Is(err, history.ErrNotInRevision):
	case err != nil:
		return false
	default:
		was = f.Blob
	}
	data, ok, err := repo.RemoteFile(path)
	if err != nil {
		return false
	}
	var now plumbing.Hash
	if ok {
		now = plumbing.ComputeHash(plumbing.BlobObject, data)
	}
	return now != was
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return h.String()[:7]
}

// blockSetsPending is each block set on record not on the remote yet,
// with why (last: the last sync failure, nil when none). One whose path
// changed on the remote since it was made is not owed (superseded).
func (a *Agent) blockSetsPending(repo *gitmem.Repo, last *LastError) []status.BlockSetPending {
	var out []status.BlockSetPending
	for _, o := range a.blockSets.Pending(a.blocksPath()) {
		oc := a.BlockSetOutcome(o.Path)
		if oc.State != "pending" || remoteChangedSince(repo, o.Base, o.Path) {
			// (Changed on the remote since: superseded, nothing owed;
			// the next push's check ends the approval.)
			continue
		}
		why := oc.Reason
		if why == "" {
			why = "committed, not on the remote yet: the next sync pushes it"
		}
		if last != nil {
			why += fmt.Sprintf("; the last sync failed (%s): %s", last.Class, last.NextStep)
		}
		out = append(out, status.BlockSetPending{Path: o.Path, Reason: why})
	}
	return out
}

// rebaseBlockApprovals binds the approvals on record to the remote's tip
// after a push of ours landed (blockset.Book.Rebase): a push that carried
// the agent's commit over an owed block (and its restore) does not make
// the operator's change superseded by the agent's own history.
func (a *Agent) rebaseBlockApprovals(repo *gitmem.Repo) {
	tip, err := repo.RemoteHead()
	if err != nil || tip.IsZero() {
		return
	}
	at := func(rev plumbing.Hash, path string) (plumbing.Hash, filemode.FileMode, error) {
		f, err := repo.FileAt(path, rev.String())
		if errors.Is(err, history.ErrNotInRevision) {
			return plumbing.ZeroHash, 0, nil
		}
		return f.Blob, f.Mode, err
	}
	same := func(base plumbing.Hash, path string) (bool, error) {
		b, bm, err := at(base, path)
		if err != nil {
			return false, err
		}
		t, tm, err := at(tip, path)
		return err == nil && b == t && bm == tm, err
	}
	if err := a.blockSets.Rebase(a.blocksPath(), tip, same, a.log); err != nil {
		a.log.Warn("operator's block set: binding it to the pushed tip failed; a later push may call it superseded", "err", err)
	}
}
