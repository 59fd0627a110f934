package gitmem

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitstore"
)

// ErrRemoteDeleteHeld: an incoming update would delete what the Incoming
// check holds (most of the memory); nothing was applied or pushed.
var ErrRemoteDeleteHeld = errors.New("remote update held: it would delete most of the memory")

// IncomingUpdate is an update from the remote about to be applied: the
// files it would delete from the local branch, net (after a replay).
type IncomingUpdate struct {
	Remote  plumbing.Hash // the remote tip
	Deleted []string
	Created int
	r       *Repo
	local   plumbing.Hash
}

// Tracked counts the files on the local branch.
func (u IncomingUpdate) Tracked() (int, error) {
	if err := u.r.flattenCommit(u.local, map[string]object.TreeEntry{}); err != nil {
		return 0, err
	}
	return len(u.r.flat), nil
}

// IncomingDecision is what an Incoming check decides.
type IncomingDecision int

// Decisions of an IncomingCheck.
const (
	ApplyIncoming   IncomingDecision = iota
	HoldIncoming                     // apply nothing: ErrRemoteDeleteHeld
	RestoreIncoming                  // apply it, then re-add the deleted files in one commit on top
)

// IncomingCheck judges an incoming update (SPEC §8: remote deletions). It
// runs under the repo's lock.
type IncomingCheck func(u IncomingUpdate) (IncomingDecision, error)

// checkIncoming runs opts.Incoming on the update from local to result
// (remote's tip, or the replay onto it). It returns what to move the branch
// to: result, or a restore commit on top of it (restored true).
func (r *Repo) checkIncoming(local, remote, result plumbing.Hash) (plumbing.Hash, bool, error) {
	if r.opts.Incoming == nil || local.IsZero() {
		return result, false, nil
	}
	localTree, err := r.objs.CommitTree(local)
	if err != nil {
		return result, false, err
	}
	resultTree, err := r.objs.CommitTree(result)
	if err != nil {
		return result, false, err
	}
	diffs, err := r.objs.DiffTrees(localTree, resultTree, "", nil)
	if err != nil {
		return result, false, err
	}
	u := IncomingUpdate{Remote: remote, r: r, local: local}
	var gone []gitstore.FileChange
	for _, d := range diffs {
		switch {
		case d.To.Hash.IsZero():
			u.Deleted = append(u.Deleted, d.Path)
			gone = append(gone, d)
		case d.From.Hash.IsZero():
			u.Created++
		}
	}
	if len(u.Deleted) == 0 {
		return result, false, nil
	}
	dec, err := r.opts.Incoming(u)
	if err != nil {
		return result, false, err
	}
	switch dec {
	case HoldIncoming:
		return result, false, fmt.Errorf("%w (%d files)", ErrRemoteDeleteHeld, len(u.Deleted))
	case RestoreIncoming:
		changes := make([]gitstore.Change, len(gone))
		for i, d := range gone {
			changes[i] = gitstore.Change{Path: d.Path, Hash: d.From.Hash, Mode: d.From.Mode}
		}
		tree, err := r.objs.ApplyChanges(resultTree, changes)
		if err != nil {
			return result, false, err
		}
		op := r.operator() // the operator's --restore-deletes
		sig := object.Signature{Name: op.Name, Email: op.Email, When: time.Now()}
		msg := fmt.Sprintf("memfsd: restore %d files a remote update deleted\n\nRemote tip: %s\n", len(gone), remote)
		h, err := r.objs.Write(plumbing.CommitObject, codec.EncodeCommit(tree, []plumbing.Hash{result}, sig, sig, msg))
		if err != nil {
			return result, false, err
		}
		r.objs.RememberCommit(h, tree)
		r.log.Warn("restored files a remote update deleted, as the operator decided", "files", len(gone))
		return h, true, r.objs.Flush(true)
	}
	return result, false, nil
}
