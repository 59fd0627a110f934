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
)

// mirrorRefPrefix holds, per branch, the tip memfsd last pushed to the
// mirror remote (refs/memfsd/mirror/main): the base of the next push's pack.
const mirrorRefPrefix = "refs/memfsd/mirror/"

// ErrMirrorDiverged: the mirror has commits the primary does not (someone
// pushed there, or memfsd's record of what it put there is gone). memfsd
// does not overwrite them unless told to (MirrorOptions.Force). It is a
// non-fast-forward for the error classes.
var ErrMirrorDiverged = fmt.Errorf("%w: the mirror has commits the primary does not", ErrNonFastForward)

// MirrorOptions adjust a mirror push.
type MirrorOptions struct {
	// Ours is the mirror tip memfsd last put there, as the caller recorded
	// it somewhere the agent cannot write (not the mirror ref: .git is in
	// the agent's reach); zero = unknown. A mirror standing at Ours holds
	// only what memfsd pushed, so when the primary's history was replaced
	// the mirror follows it.
	Ours plumbing.Hash
	// Force overwrites a mirror that has commits the primary does not.
	Force bool
}

// MirrorResult says what a mirror push did.
type MirrorResult struct {
	Tip     plumbing.Hash // the primary's tip, now the mirror's (zero: the primary has no commit yet)
	From    plumbing.Hash // the mirror's tip before (zero: empty)
	Commits int           // commits new to the mirror (a forced push sends the history, counts only these)
	Objects int
	// Replaced: the mirror's branch did not lead to Tip and was moved
	// anyway (the primary's history was replaced, or Force).
	Replaced bool
}

// MirrorPosition is how far the mirror is behind the primary, as far as
// this repository knows (the tracking ref against the mirror ref).
type MirrorPosition struct {
	Primary plumbing.Hash // last known tip of the primary's branch
	Mirror  plumbing.Hash // tip last pushed to the mirror
	Pending int           // commits of Primary the mirror does not have
}

func (r *Repo) mirrorRef() string { return mirrorRefPrefix + r.opts.Branch }

// MirrorHead is the tip last pushed to the mirror (zero when never).
func (r *Repo) MirrorHead() (plumbing.Hash, error) {
	return gitstore.ReadRef(r.GitDir, r.mirrorRef())
}

// MirrorPosition compares the primary's last known tip with the mirror's.
func (r *Repo) MirrorPosition() (MirrorPosition, error) {
	r.mu.Lock()
	defer r.unlock()
	var p MirrorPosition
	var err error
	if p.Primary, err = r.RemoteHead(); err != nil {
		return p, fmt.Errorf("mirror position: %w", err)
	}
	if p.Mirror, err = r.MirrorHead(); err != nil {
		return p, fmt.Errorf("mirror position: %w", err)
	}
	if !p.Mirror.IsZero() && !r.objs.Has(p.Mirror) {
		p.Mirror = plumbing.ZeroHash // gone from our store: count everything
	}
	if _, p.Pending, _, err = ancestry.AheadBehind(r.objs, p.Primary, p.Mirror); err != nil {
		return p, fmt.Errorf("mirror position: %w", err)
	}
	return p, nil
}

// PushMirror makes the mirror's branch equal the primary's tip as the
// primary advertises it (never the local branch nor the remote-tracking
// ref, which the agent can write: only what reached the primary is
// mirrored). Nothing is fetched from the mirror. It reads the
// mirror's tip from its ref advertisement, packs only the commits the
// mirror lacks (their tree diffs), and moves the mirror's branch by
// compare-and-swap from the tip it advertised; then remembers the new tip
// under refs/memfsd/mirror/<branch>. A mirror that does not lead to the
// tip is overwritten only when it stands where memfsd left it (opts.Ours)
// or with opts.Force; otherwise ErrMirrorDiverged. The
// network steps run without the repository's lock, and it never takes the
// sync lock: a slow mirror holds up neither writes nor the primary's syncs.
// Callers run one PushMirror per repository at a time.
func (r *Repo) PushMirror(ctx context.Context, m Remote, opts MirrorOptions) (MirrorResult, error) {
	res, err := r.pushMirror(ctx, m, opts)
	if err != nil {
		return res, fmt.Errorf("push mirror: %w", err)
	}
	return res, nil
}

func (r *Repo) pushMirror(ctx context.Context, m Remote, opts MirrorOptions) (MirrorResult, error) {
	var res MirrorResult
	tip, err := r.primaryTip(ctx)
	if err != nil || tip.IsZero() {
		return res, err
	}
	res.Tip = tip
	s, err := wire.Session(m.URL, m.Auth, true)
	if err != nil {
		return res, err
	}
	sess := s.(transport.ReceivePackSession)
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return res, err
	}
	caps := capability.NewList()
	if ar != nil {
		caps = ar.Capabilities
		refs, err := ar.AllReferences()
		if err != nil {
			return res, err
		}
		if ref, ok := refs[plumbing.ReferenceName(r.branchRef())]; ok {
			res.From = ref.Hash()
		}
	}
	var plan mirrorPlan
	r.underLock(func() { plan, err = r.planMirror(tip, res.From, opts) })
	if err != nil {
		return res, err
	}
	res.Replaced = plan.replaced
	if res.From != tip {
		if err := wire.SendUpdate(ctx, sess, caps, r.branchRef(), res.From, tip, plan.pack); err != nil {
			return res, err
		}
		res.Commits, res.Objects = plan.fresh, plan.objects
	}
	r.mu.Lock()
	defer r.unlock()
	if h, err := r.MirrorHead(); err == nil && h == tip {
		return res, nil // already recorded: no lock, write and rename
	}
	return res, gitstore.SetRef(r.GitDir, r.mirrorRef(), tip, r.opts.LockWait, r.spares)
}

// ErrPrimaryAhead: the primary's tip is not in this clone yet (another
// writer pushed since the last sync); the next sync brings it, and the
// mirror push after it sends it. Retryable.
var ErrPrimaryAhead = errors.New("the primary's tip is not in this clone yet")

// primaryTip is the primary's branch tip as the primary advertises it, when
// this clone has it. Not the remote-tracking ref: .git is in the agent's
// reach, and a tracking ref the agent pointed at its own commit would send
// to the mirror what never passed the outgoing check nor reached the
// primary. One ref advertisement, without the repository's lock.
func (r *Repo) primaryTip(ctx context.Context) (plumbing.Hash, error) {
	s, err := r.session(ctx, false)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("primary: %w", err)
	}
	defer s.Close()
	ar, err := s.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("primary: %w", err)
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("primary: %w", err)
	}
	ref, ok := refs[plumbing.ReferenceName(r.branchRef())]
	if !ok {
		return plumbing.ZeroHash, nil
	}
	var have bool
	r.underLock(func() { have = r.objs.Has(ref.Hash()) })
	if !have {
		return plumbing.ZeroHash, fmt.Errorf("primary at %s: %w", gitstore.Short(ref.Hash()), ErrPrimaryAhead)
	}
	return ref.Hash(), nil
}

// mirrorPlan is what a mirror push sends, prepared under r.mu.
type mirrorPlan struct {
	commits  []plumbing.Hash
	pack     []byte
	objects  int
	replaced bool
	fresh    int // commits new to the mirror (Force sends more, none new)
}

// mirrorRelation says in words how a mirror's tip stands to the primary's
// (known: the mirror's commit is in this clone). A commit this clone lacks
// is not called unrelated: it may well be a child of a primary commit.
func mirrorRelation(rel Relation, known bool) string {
	switch {
	case !known:
		return "its tip is a commit the primary does not have, pushed to the mirror by someone else"
	case rel == Behind:
		return "the mirror is ahead of the primary on the same line"
	case rel == Diverged:
		return "both moved on from a common commit"
	}
	return rel.String()
}

// planMirror decides how the mirror at from reaches tip and packs what it
// lacks (under r.mu): a fast-forward sends the commits since from; a
// mirror memfsd may overwrite gets the commits since the histories met (or
// the whole history when they never did: the cost of a replaced history).
func (r *Repo) planMirror(tip, from plumbing.Hash, opts MirrorOptions) (mirrorPlan, error) {
	var p mirrorPlan
	if from == tip {
		return p, nil
	}
	stop := from // objects reachable from stop are on the mirror
	if !from.IsZero() {
		rel, base := Unrelated, plumbing.ZeroHash
		if r.objs.Has(from) {
			var err error
			if rel, base, err = ancestry.RelateBase(r.objs, tip, from); err != nil {
				return p, err
			}
		}
		if rel != Ahead {
			if (opts.Ours.IsZero() || from != opts.Ours) && !opts.Force {
				return p, fmt.Errorf("%w: its %s is at %s, the primary's at %s (%s)", ErrMirrorDiverged, r.opts.Branch, gitstore.Short(from), gitstore.Short(tip), mirrorRelation(rel, r.objs.Has(from)))
			}
			p.replaced = true
			stop = base // Behind: base is tip itself; Unrelated or unknown: zero
		}
	}
	if stop != tip { // stop == tip: a mirror ahead on the same line, nothing to send
		var err error
		if p.commits, err = ancestry.Since(r.objs, tip, stop); err != nil {
			return p, err
		}
		p.fresh = len(p.commits)
		if stop.IsZero() && !from.IsZero() && !opts.Ours.IsZero() && r.objs.Has(opts.Ours) {
			// The whole history goes (the mirror's tip is not ours to
			// build on), but only what came after the tip memfsd last put
			// there is new to the mirror: that is the count.
			fresh, err := ancestry.Since(r.objs, tip, opts.Ours)
			if err != nil {
				return p, err
			}
			p.fresh = len(fresh)
		}
	}
	var err error
	p.pack, p.objects, err = wire.BuildPack(r.objs, p.commits)
	return p, err
}
