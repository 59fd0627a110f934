package gitmem

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/memfsd/memfsd/ancestry"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/wire"
	"github.com/memfsd/memfsd/worktree"
)

// PushResult says what a push sent.
type PushResult struct {
	Commits int // commits sent; 0 when the remote had them all
	Objects int
	Head    plumbing.Hash
	// Restored are read-only paths the outgoing check put back (one
	// `memfsd: restore read-only` commit each) before the push.
	Restored []string
}

// Push sends the commits the remote lacks and moves the remote branch by
// compare-and-swap from the tip it advertised. The pack holds only the new
// commits and the objects their tree diffs introduce, so the cost follows
// the change, not the length of the history. A remote that moved on gives
// ErrNonFastForward (or ErrUnrelatedHistory); nothing is overwritten.
func (r *Repo) Push(ctx context.Context) (PushResult, error) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	res, err := r.push(ctx)
	if err != nil {
		return res, fmt.Errorf("push: %w", err)
	}
	return res, nil
}

// push runs the network steps (ref advertisement, receive-pack) without
// r.mu; reading the branch and building the pack, and moving the tracking
// ref after, are the local steps under it. A commit landing meanwhile is
// not in this push and stays ahead.
func (r *Repo) push(ctx context.Context) (PushResult, error) {
	if local, err := r.lockedHead(); err != nil || local.IsZero() {
		return PushResult{}, err
	}
	s, err := r.session(ctx, true)
	if err != nil {
		return PushResult{}, err
	}
	sess := s.(transport.ReceivePackSession)
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return PushResult{}, err
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return PushResult{}, err
	}
	var remote plumbing.Hash
	if ref, ok := refs[plumbing.ReferenceName(r.branchRef())]; ok {
		remote = ref.Hash()
	}
	return r.sendPush(ctx, sess, remote, ar.Capabilities)
}

// pushDirect is the one-request push: a POST to git-receive-pack with the
// remote tip memfsd last saw as the old value and no ref advertisement
// before it (smart-HTTP receive-pack is stateless). It asks only for what
// every server has (report-status). The pack assumes the remote still has
// that tip, unverified: only the server's answer checks it. A server that
// moved on refuses the update in its report (git's compare-and-swap:
// "failed to update ref"; or, when its history was replaced and it lacks
// our old tip altogether, git's connectivity check, which runs first:
// "missing necessary objects"), and the caller must then learn the real
// tip (fetch) before it pushes again.
func (r *Repo) pushDirect(ctx context.Context, remote plumbing.Hash) (PushResult, error) {
	s, err := r.session(ctx, true)
	if err != nil {
		return PushResult{}, err
	}
	sess := s.(transport.ReceivePackSession)
	defer sess.Close()
	return r.sendPush(ctx, sess, remote, capability.NewList())
}

// sendPush packs what remote lacks (under r.mu) and sends it (without).
func (r *Repo) sendPush(ctx context.Context, sess transport.ReceivePackSession, remote plumbing.Hash, caps *capability.List) (PushResult, error) {
	var out pushPlan
	var err error
	r.underWork(func() { out, err = r.preparePush(remote) }) // the outgoing check may put a read-only block back
	local := out.local
	res := PushResult{Head: local, Restored: out.restored}
	if err != nil || local == remote {
		return res, err
	}
	if err := wire.SendUpdate(ctx, sess, caps, r.branchRef(), remote, local, out.pack); err != nil {
		return res, err
	}
	res.Commits, res.Objects = len(out.commits), out.objects
	r.mu.Lock()
	defer r.unlock()
	return res, gitstore.SetRef(r.GitDir, r.trackingRef(), local, r.opts.LockWait, r.spares)
}

// pushPlan is what a push sends, prepared under r.mu.
type pushPlan struct {
	local    plumbing.Hash
	commits  []plumbing.Hash
	pack     []byte
	objects  int
	restored []string
}

// preparePush reads the branch, runs the outgoing check (which may add
// restore commits on top) and packs what the remote lacks (under r.mu).
// When the remote already has the branch's tip, it only moves the tracking
// ref.
func (r *Repo) preparePush(remote plumbing.Hash) (pushPlan, error) {
	var p pushPlan
	var err error
	if p.local, err = r.Head(); err != nil {
		return p, err
	}
	if remote == p.local {
		return p, gitstore.SetRef(r.GitDir, r.trackingRef(), p.local, r.opts.LockWait, r.spares)
	}
	if p.commits, err = ancestry.CommitsSince(r.objs, p.local, remote); err != nil {
		return p, err
	}
	if tip, restored, err := r.checkOutgoing(remote, p.local); err != nil {
		return p, fmt.Errorf("outgoing check: %w", err)
	} else if tip != p.local {
		p.local, p.restored = tip, restored
		if p.commits, err = ancestry.CommitsSince(r.objs, p.local, remote); err != nil {
			return p, err
		}
	}
	if err := r.checkRange(p.commits); err != nil {
		return p, err
	}
	p.pack, p.objects, err = wire.BuildPack(r.objs, p.commits)
	return p, err
}

// ErrPushSecret: a commit about to be pushed holds text that looks like a
// credential (Options.Secret); nothing was pushed.
var ErrPushSecret = errors.New("a commit to push holds what looks like a credential")

// ErrPushUntrackable: a commit about to be pushed carries a path memfsd
// could not check out (worktree.Check: a .git in any case or disguise,
// ...): pushed, it would stop every host that clones the memory. Nothing
// is pushed until that commit is gone (a permanent error: a person acts).
var ErrPushUntrackable = errors.New("a commit to push carries a path memfsd could not check out")

// checkRange checks every file each commit of the range adds or changes
// (not only the range's end state: what was written and then deleted is
// still in history once pushed): its path must be one memfsd can check out
// itself (ErrPushUntrackable), and Options.Secret must find no credential
// in it (ErrPushSecret).
func (r *Repo) checkRange(commits []plumbing.Hash) error {
	for _, h := range commits {
		c, err := r.objs.Commit(h)
		if err != nil {
			return err
		}
		var parentTree plumbing.Hash
		if len(c.ParentHashes) > 0 {
			if parentTree, err = r.objs.CommitTree(c.ParentHashes[0]); err != nil {
				return err
			}
		}
		diffs, err := r.objs.DiffTrees(parentTree, c.TreeHash, "", nil)
		if err != nil {
			return err
		}
		for _, d := range diffs {
			if d.To.Hash.IsZero() {
				continue
			}
			if err := worktree.Check(d.Path); err != nil {
				return fmt.Errorf("%w: %v, commit %s: drop that commit (git reset) and write the file again under another name", ErrPushUntrackable, err, gitstore.Short(h))
			}
			if r.opts.Secret == nil {
				continue
			}
			data, err := r.objs.Blob(d.To.Hash)
			if err != nil {
				return err
			}
			if pattern, found := r.opts.Secret(data); found {
				return fmt.Errorf("%w (%s) in %s, commit %s: drop that commit (git reset) and write the file again without it", ErrPushSecret, pattern, d.Path, gitstore.Short(h))
			}
		}
	}
	return nil
}

// lockedHead is Head under r.mu.
func (r *Repo) lockedHead() (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.unlock()
	return r.Head()
}
