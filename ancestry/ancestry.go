// Package ancestry answers how two commits' histories stand to each other:
// ahead, behind, diverged or unrelated, by how many commits, which commits
// one side has and the other lacks. Its walks go back from both tips at once,
// breadth-first, so the usual questions cost the distance between the tips,
// not the length of the history. It reads commits from the object store
// (package gitstore) and writes nothing; the caller holds whatever lock
// orders the store's writes.
package ancestry

import (
	"errors"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitstore"
)

var (
	// ErrNonFastForward: the remote moved on while we committed locally.
	ErrNonFastForward = errors.New("non-fast-forward: local and remote both have new commits")
	// ErrUnrelatedHistory: local and remote share no commit.
	ErrUnrelatedHistory = errors.New("unrelated histories: local and remote share no commit")
)

// Relation is how the local branch stands against the remote branch.
type Relation int

// Relations between local and remote.
const (
	Same Relation = iota
	Ahead
	Behind
	Diverged
	Unrelated
)

func (rel Relation) String() string {
	return [...]string{"same", "ahead", "behind", "diverged", "unrelated"}[rel]
}

// Relate finds how local stands against remote. It walks both histories
// back at once, one commit each in turn, so the common cases (ahead or
// behind by a few commits) cost what the difference costs, not the history.
func Relate(objs *gitstore.Objects, local, remote plumbing.Hash) (Relation, error) {
	rel, _, err := RelateBase(objs, local, remote)
	return rel, err
}

// RelateBase is Relate that also returns, for Diverged, the commit where
// the two walks met (the merge base of linear histories).
func RelateBase(objs *gitstore.Objects, local, remote plumbing.Hash) (Relation, plumbing.Hash, error) {
	switch {
	case local == remote:
		return Same, local, nil
	case local.IsZero():
		return Behind, local, nil
	case remote.IsZero():
		return Ahead, remote, nil
	}
	fromLocal := newWalker(objs, local)
	fromRemote := newWalker(objs, remote)
	meet := func(w, other *walker) (plumbing.Hash, bool) {
		for _, h := range w.fresh {
			if other.seen[h] {
				return h, true
			}
		}
		return plumbing.ZeroHash, false
	}
	for !fromLocal.done() || !fromRemote.done() {
		if ok, err := fromLocal.step(); err != nil {
			return 0, plumbing.ZeroHash, err
		} else if ok && fromLocal.seen[remote] {
			return Ahead, remote, nil
		}
		if ok, err := fromRemote.step(); err != nil {
			return 0, plumbing.ZeroHash, err
		} else if ok && fromRemote.seen[local] {
			return Behind, local, nil
		}
		// The walks met below both tips: a common ancestor that is
		// neither tip. (Misreading a rare merge-shaped "behind" as
		// diverged is harmless: the replay then has nothing to replay.)
		if h, ok := meet(fromLocal, fromRemote); ok {
			return Diverged, h, nil
		}
		if h, ok := meet(fromRemote, fromLocal); ok {
			return Diverged, h, nil
		}
	}
	return Unrelated, plumbing.ZeroHash, nil
}

// Since lists the commits reachable from from without passing through stop,
// oldest first (none when from is zero; the whole history when stop is).
func Since(objs *gitstore.Objects, from, stop plumbing.Hash) ([]plumbing.Hash, error) {
	if from.IsZero() {
		return nil, nil
	}
	w := newWalker(objs, from)
	if !stop.IsZero() {
		w.seen[stop] = true
	}
	for !w.done() {
		if _, err := w.step(); err != nil {
			return nil, err
		}
	}
	out := slices.Clone(w.order)
	slices.Reverse(out)
	return out, nil
}

// CommitsSince lists the commits reachable from local but not from remote,
// oldest first. It walks back from local and stops at remote: the usual
// case costs the number of new commits. When remote is not an ancestor
// (someone else pushed), it reports the relation as an error.
func CommitsSince(objs *gitstore.Objects, local, remote plumbing.Hash) ([]plumbing.Hash, error) {
	if !remote.IsZero() {
		if !objs.Has(remote) {
			return nil, ErrNonFastForward // the remote has commits we never fetched
		}
		rel, err := Relate(objs, local, remote)
		if err != nil {
			return nil, err
		}
		switch rel {
		case Diverged, Behind:
			return nil, ErrNonFastForward
		case Unrelated:
			return nil, ErrUnrelatedHistory
		}
	}
	// Ahead: every path back from local reaches remote (or the root).
	return Since(objs, local, remote)
}

// AheadBehind counts the commits on each side only.
func AheadBehind(objs *gitstore.Objects, local, remote plumbing.Hash) (Relation, int, int, error) {
	rel, base, err := RelateBase(objs, local, remote)
	if err != nil {
		return rel, 0, 0, err
	}
	only := func(from, stop plumbing.Hash) (map[plumbing.Hash]bool, error) {
		hs, err := Since(objs, from, stop)
		if err != nil || hs == nil {
			return nil, err
		}
		set := make(map[plumbing.Hash]bool, len(hs))
		for _, h := range hs {
			set[h] = true
		}
		return set, nil
	}
	switch rel {
	case Same:
		return rel, 0, 0, nil
	case Ahead:
		a, err := only(local, remote)
		return rel, len(a), 0, err
	case Behind:
		b, err := only(remote, local)
		return rel, 0, len(b), err
	case Diverged:
		// Count each side down to where the walks met: exact for the
		// linear histories memfsd makes, and it costs the divergence.
		a, err := only(local, base)
		if err != nil {
			return rel, 0, 0, err
		}
		b, err := only(remote, base)
		return rel, len(a), len(b), err
	}
	// Unrelated: whole histories, then the difference.
	a, err := only(local, plumbing.ZeroHash)
	if err != nil {
		return rel, 0, 0, err
	}
	b, err := only(remote, plumbing.ZeroHash)
	if err != nil {
		return rel, 0, 0, err
	}
	ahead, behind := 0, 0
	for h := range a {
		if !b[h] {
			ahead++
		}
	}
	for h := range b {
		if !a[h] {
			behind++
		}
	}
	return rel, ahead, behind, nil
}

// LocalOnly lists local's first-parent chain back to (not including) the
// first commit that remote's history contains, oldest first. It walks
// remote's history breadth-first and local's chain in turns, so the cost
// follows the distance to the merge base, not the length of the history.
func LocalOnly(objs *gitstore.Objects, local, remote plumbing.Hash) ([]*object.Commit, error) {
	theirs := newWalker(objs, remote)
	var chain []*object.Commit
	inChain := map[plumbing.Hash]int{}
	cut := -1 // index in chain of the first commit remote has
	next := local
	for cut < 0 {
		progressed := false
		if !next.IsZero() {
			if theirs.seen[next] {
				cut = len(chain)
				break
			}
			c, err := objs.Commit(next)
			if err != nil {
				return nil, err
			}
			inChain[next] = len(chain)
			chain = append(chain, c)
			next = plumbing.ZeroHash
			if len(c.ParentHashes) > 0 {
				next = c.ParentHashes[0]
			}
			progressed = true
		}
		if ok, err := theirs.step(); err != nil {
			return nil, err
		} else if ok {
			progressed = true
			for _, h := range theirs.fresh {
				if i, ok := inChain[h]; ok && (cut < 0 || i < cut) {
					cut = i
				}
			}
		}
		if !progressed {
			break // both walks ended: unrelated, everything is local
		}
	}
	if cut >= 0 {
		chain = chain[:cut]
	}
	slices.Reverse(chain)
	return chain, nil
}

// Reaches reports whether from's history contains target, walking back at
// most until commits older than target by a day (clock skew allowance).
func Reaches(objs *gitstore.Objects, from, target plumbing.Hash) (bool, error) {
	tc, err := objs.Commit(target)
	if err != nil {
		return false, err
	}
	floor := tc.Committer.When.Add(-24 * time.Hour)
	w := newWalker(objs, from)
	for !w.done() {
		if w.seen[target] {
			return true, nil
		}
		h := w.queue[0]
		c, err := objs.Commit(h)
		if err != nil {
			return false, err
		}
		if c.Committer.When.Before(floor) {
			w.queue = w.queue[1:] // too old to lead to target
			continue
		}
		if _, err := w.step(); err != nil {
			return false, err
		}
	}
	return w.seen[target], nil
}

// walker visits a commit's ancestors breadth-first.
type walker struct {
	objs  *gitstore.Objects
	queue []plumbing.Hash
	seen  map[plumbing.Hash]bool
	order []plumbing.Hash
	fresh []plumbing.Hash // commits first seen by the last step
}

func newWalker(objs *gitstore.Objects, start plumbing.Hash) *walker {
	return &walker{objs: objs, queue: []plumbing.Hash{start}, seen: map[plumbing.Hash]bool{start: true}}
}

func (w *walker) done() bool { return len(w.queue) == 0 }

// step visits one commit; false when nothing was left.
func (w *walker) step() (bool, error) {
	if len(w.queue) == 0 {
		return false, nil
	}
	h := w.queue[0]
	w.queue = w.queue[1:]
	w.order = append(w.order, h)
	c, err := w.objs.Commit(h)
	if err != nil {
		return false, err
	}
	w.fresh = w.fresh[:0]
	for _, p := range c.ParentHashes {
		if !w.seen[p] {
			w.seen[p] = true
			w.queue = append(w.queue, p)
			w.fresh = append(w.fresh, p)
		}
	}
	return true, nil
}
