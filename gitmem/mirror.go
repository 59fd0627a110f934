package gitmem

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/ancestry"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/mirrorpush"
	"github.com/memfsd/memfsd/wire"
)

// A mirror push is package mirrorpush; these names keep gitmem's API as it
// was for its callers.
type (
	// MirrorOptions adjust a mirror push (see mirrorpush.Options).
	MirrorOptions = mirrorpush.Options
	// MirrorResult says what a mirror push did.
	MirrorResult = mirrorpush.Result
	// MirrorPosition is how far the mirror is behind the primary, as far
	// as this repository knows (the tracking ref against the mirror ref).
	MirrorPosition = mirrorpush.Position
)

var (
	// ErrMirrorDiverged: the mirror has commits the primary does not (see
	// mirrorpush.ErrDiverged); a non-fast-forward for the error classes.
	ErrMirrorDiverged = mirrorpush.ErrDiverged
	// ErrPrimaryAhead: the primary's tip is not in this clone yet (another
	// writer pushed since the last sync); the next sync brings it. Retryable.
	ErrPrimaryAhead = mirrorpush.ErrPrimaryAhead
)

func (r *Repo) mirrorRef() string { return mirrorpush.RefPrefix + r.opts.Branch }

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
	t, err := mirrorpush.Dial(ctx, m.URL, m.Auth, r.branchRef())
	if err != nil {
		return res, err
	}
	defer t.Close()
	res.From = t.Tip
	var plan mirrorpush.Plan
	r.underLock(func() { plan, err = mirrorpush.NewPlan(r.objs, r.opts.Branch, tip, res.From, opts) })
	if err != nil {
		return res, err
	}
	res.Replaced = plan.Replaced
	if res.From != tip {
		if err := t.Send(ctx, tip, plan); err != nil {
			return res, err
		}
		res.Commits, res.Objects = plan.Fresh, plan.Objects
	}
	r.mu.Lock()
	defer r.unlock()
	if h, err := r.MirrorHead(); err == nil && h == tip {
		return res, nil // already recorded: no lock, write and rename
	}
	return res, gitstore.SetRef(r.GitDir, r.mirrorRef(), tip, r.opts.LockWait, r.spares)
}

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
	tip, _, err := wire.BranchTip(ctx, s, r.branchRef())
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("primary: %w", err)
	}
	if tip.IsZero() {
		return tip, nil
	}
	var have bool
	r.underLock(func() { have = r.objs.Has(tip) })
	if !have {
		return plumbing.ZeroHash, fmt.Errorf("primary at %s: %w", gitstore.Short(tip), ErrPrimaryAhead)
	}
	return tip, nil
}
