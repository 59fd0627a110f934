// Package mirrorpush sends a repository's branch to a mirror remote: it
// reads the mirror's tip from its ref advertisement, plans what the mirror
// lacks (the commits since the histories met, or the whole history when a
// mirror memfsd may overwrite has another), packs only those commits' tree
// diffs and moves the mirror's branch by compare-and-swap from the tip it
// advertised. Nothing is fetched from the mirror. The plan reads the
// object store (package gitstore) under the lock the caller holds; the
// network steps need none. The repository (package gitmem) decides the tip
// to mirror and records what it pushed; the agent's mirror loop calls it.
package mirrorpush

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

// RefPrefix holds, per branch, the tip memfsd last pushed to the mirror
// remote (refs/memfsd/mirror/main): the base of the next push's pack.
const RefPrefix = "refs/memfsd/mirror/"

// ErrDiverged: the mirror has commits the primary does not (someone
// pushed there, or memfsd's record of what it put there is gone). memfsd
// does not overwrite them unless told to (Options.Force). It is a
// non-fast-forward for the error classes.
var ErrDiverged = fmt.Errorf("%w: the mirror has commits the primary does not", ancestry.ErrNonFastForward)

// ErrPrimaryAhead: the primary's tip is not in this clone yet (another
// writer pushed since the last sync); the next sync brings it, and the
// mirror push after it sends it. Retryable.
var ErrPrimaryAhead = errors.New("the primary's tip is not in this clone yet")

// Options adjust a mirror push.
type Options struct {
	// Ours is the mirror tip memfsd last put there, as the caller recorded
	// it somewhere the agent cannot write (not the mirror ref: .git is in
	// the agent's reach); zero = unknown. A mirror standing at Ours holds
	// only what memfsd pushed, so when the primary's history was replaced
	// the mirror follows it.
	Ours plumbing.Hash
	// Force overwrites a mirror that has commits the primary does not.
	Force bool
}

// Result says what a mirror push did.
type Result struct {
	Tip     plumbing.Hash // the primary's tip, now the mirror's (zero: the primary has no commit yet)
	From    plumbing.Hash // the mirror's tip before (zero: empty)
	Commits int           // commits new to the mirror (a forced push sends the history, counts only these)
	Objects int
	// Replaced: the mirror's branch did not lead to Tip and was moved
	// anyway (the primary's history was replaced, or Force).
	Replaced bool
}

// Position is how far the mirror is behind the primary, as far as a
// repository knows (its tracking ref against its mirror ref).
type Position struct {
	Primary plumbing.Hash // last known tip of the primary's branch
	Mirror  plumbing.Hash // tip last pushed to the mirror
	Pending int           // commits of Primary the mirror does not have
}

// Target is a mirror's receive-pack session, opened with its ref
// advertisement.
type Target struct {
	sess transport.ReceivePackSession
	caps *capability.List
	ref  string
	Tip  plumbing.Hash // the mirror's tip of the branch (zero: none)
}

// Dial opens a receive-pack session with the mirror at url and reads its
// tip of ref.
func Dial(ctx context.Context, url string, auth transport.AuthMethod, ref string) (*Target, error) {
	s, err := wire.Session(url, auth, true)
	if err != nil {
		return nil, err
	}
	t := &Target{sess: s.(transport.ReceivePackSession), ref: ref}
	if t.Tip, t.caps, err = wire.BranchTip(ctx, t.sess, ref); err != nil {
		t.sess.Close()
		return nil, err
	}
	return t, nil
}

// Close ends the session.
func (t *Target) Close() error { return t.sess.Close() }

// Send moves the mirror's branch from the tip it advertised to tip, with
// the plan's pack.
func (t *Target) Send(ctx context.Context, tip plumbing.Hash, p Plan) error {
	return wire.SendUpdate(ctx, t.sess, t.caps, t.ref, t.Tip, tip, p.Pack)
}

// Plan is what a mirror push sends.
type Plan struct {
	Commits  []plumbing.Hash
	Pack     []byte
	Objects  int
	Replaced bool
	Fresh    int // commits new to the mirror (Force sends more, none new)
}

// relation says in words how a mirror's tip stands to the primary's
// (known: the mirror's commit is in this clone). A commit this clone lacks
// is not called unrelated: it may well be a child of a primary commit.
func relation(rel ancestry.Relation, known bool) string {
	switch {
	case !known:
		return "its tip is a commit the primary does not have, pushed to the mirror by someone else"
	case rel == ancestry.Behind:
		return "the mirror is ahead of the primary on the same line"
	case rel == ancestry.Diverged:
		return "both moved on from a common commit"
	}
	return rel.String()
}

// NewPlan decides how the mirror of branch at from reaches tip and packs
// what it lacks (under the caller's lock on objs): a fast-forward sends the
// commits since from; a mirror memfsd may overwrite gets the commits since
// the histories met (or the whole history when they never did: the cost of
// a replaced history).
func NewPlan(objs *gitstore.Objects, branch string, tip, from plumbing.Hash, opts Options) (Plan, error) {
	var p Plan
	if from == tip {
		return p, nil
	}
	stop := from // objects reachable from stop are on the mirror
	if !from.IsZero() {
		rel, base := ancestry.Unrelated, plumbing.ZeroHash
		if objs.Has(from) {
			var err error
			if rel, base, err = ancestry.RelateBase(objs, tip, from); err != nil {
				return p, err
			}
		}
		if rel != ancestry.Ahead {
			if (opts.Ours.IsZero() || from != opts.Ours) && !opts.Force {
				return p, fmt.Errorf("%w: its %s is at %s, the primary's at %s (%s)", ErrDiverged, branch, gitstore.Short(from), gitstore.Short(tip), relation(rel, objs.Has(from)))
			}
			p.Replaced = true
			stop = base // Behind: base is tip itself; Unrelated or unknown: zero
		}
	}
	if stop != tip { // stop == tip: a mirror ahead on the same line, nothing to send
		var err error
		if p.Commits, err = ancestry.Since(objs, tip, stop); err != nil {
			return p, err
		}
		p.Fresh = len(p.Commits)
		if stop.IsZero() && !from.IsZero() && !opts.Ours.IsZero() && objs.Has(opts.Ours) {
			// The whole history goes (the mirror's tip is not ours to
			// build on), but only what came after the tip memfsd last put
			// there is new to the mirror: that is the count.
			fresh, err := ancestry.Since(objs, tip, opts.Ours)
			if err != nil {
				return p, err
			}
			p.Fresh = len(fresh)
		}
	}
	var err error
	p.Pack, p.Objects, err = wire.BuildPack(objs, p.Commits)
	return p, err
}
