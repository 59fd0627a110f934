package gitmem

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/ancestry"
	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/worktree"
)

// OutgoingFile is a file a push would change on the remote: its version at
// the remote tip and at the local tip.
type OutgoingFile struct {
	Path          string
	InRemote      bool
	InLocal       bool
	remote, local object.TreeEntry
	objs          *gitstore.Objects
}

// Remote reads the remote tip's version (nil when absent there).
func (f OutgoingFile) Remote() ([]byte, error) { return f.read(f.InRemote, f.remote) }

// Local reads the local tip's version (nil when absent there).
func (f OutgoingFile) Local() ([]byte, error) { return f.read(f.InLocal, f.local) }

// LocalHash is the blob id of the local version (zero when absent).
func (f OutgoingFile) LocalHash() plumbing.Hash { return f.local.Hash }

// RemoteMode is the remote tip's file mode (zero when absent there).
func (f OutgoingFile) RemoteMode() filemode.FileMode { return f.remote.Mode }

// LocalMode is the local tip's file mode (zero when absent there).
func (f OutgoingFile) LocalMode() filemode.FileMode { return f.local.Mode }

func (f OutgoingFile) read(ok bool, e object.TreeEntry) ([]byte, error) {
	if !ok {
		return nil, nil
	}
	data, err := f.objs.Blob(e.Hash)
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}

// OutgoingPlan is what the outgoing check wants done before the push.
type OutgoingPlan struct {
	// ReadOnly are put back to the remote's version, one
	// `memfsd: restore read-only <path>` commit each, the bytes kept.
	ReadOnly []string
	// Readd are files the range deletes, re-added from the remote's
	// version in one `memfsd: restore N deleted files` commit (where the
	// work tree has a file of that name, it is left as it is).
	Readd []string
	// HoldBack are put back to the remote's version in the commit and
	// the index only, one `memfsd: hold back <path>` commit each; the
	// work tree keeps the agent's file, an uncommitted write again.
	HoldBack []string
}

// OutgoingRemote is the remote tip a push starts from (the old value of
// its compare-and-swap), as the outgoing check sees it.
type OutgoingRemote struct {
	Tip  plumbing.Hash
	r    *Repo
	tree plumbing.Hash
}

// Files counts the files at the remote tip.
func (o OutgoingRemote) Files() (int, error) {
	if err := o.r.flattenCommit(o.Tip, map[string]object.TreeEntry{}); err != nil {
		return 0, err
	}
	return len(o.r.flat), nil
}

// Entry is path's blob id and mode at the remote tip (zero when absent).
func (o OutgoingRemote) Entry(path string) (plumbing.Hash, filemode.FileMode, error) {
	e, ok, err := o.r.objs.EntryAt(o.tree, path)
	if err != nil || !ok {
		return plumbing.ZeroHash, 0, err
	}
	return e.Hash, e.Mode, nil
}

// Unchanged reports whether base is the remote tip or an ancestor of it
// and every commit since base has path as base had it (same blob id and
// mode, or absent alike): nobody changed path on the remote since base,
// not even to change it back. A base unknown here (a replaced history)
// is false.
func (o OutgoingRemote) Unchanged(base plumbing.Hash, path string) (bool, error) {
	if base == o.Tip {
		return true, nil
	}
	if base.IsZero() || !o.r.objs.Has(base) {
		return false, nil
	}
	commits, err := ancestry.CommitsSince(o.r.objs, o.Tip, base)
	if errors.Is(err, ErrNonFastForward) || errors.Is(err, ErrUnrelatedHistory) {
		return false, nil // base is not an ancestor of the tip
	}
	if err != nil {
		return false, err
	}
	entry := func(c plumbing.Hash) (object.TreeEntry, error) {
		tree, err := o.r.objs.CommitTree(c)
		if err != nil {
			return object.TreeEntry{}, err
		}
		e, _, err := o.r.objs.EntryAt(tree, path)
		return e, err
	}
	want, err := entry(base)
	if err != nil {
		return false, err
	}
	for _, c := range commits {
		got, err := entry(c)
		if err != nil {
			return false, err
		}
		if got.Hash != want.Hash || got.Mode != want.Mode {
			return false, nil
		}
	}
	return true, nil
}

// ErrPushHeld is wrapped by an outgoing check that refuses the whole push
// (a wholesale deletion no operator has decided on).
var ErrPushHeld = errors.New("push held")

// OutgoingCheck judges what a push would change on the remote (SPEC §8:
// the outgoing range check); remote is the tip the push starts from. An
// error wrapping ErrPushHeld holds the push. It runs under the repo's lock.
type OutgoingCheck func(files []OutgoingFile, remote OutgoingRemote) (OutgoingPlan, error)

// checkOutgoing runs opts.Outgoing over the range remote..local (their
// trees' difference: O(change)) and commits, on top of local, one
// `memfsd: restore read-only <path>` commit per path it names, putting the
// remote's version back in the tree, the index and the work tree. The
// rejected bytes (the local version, and a newer uncommitted write the
// swap displaced) go to opts.Keep first. It returns the new local tip.
// Called under r.mu by preparePush.
func (r *Repo) checkOutgoing(remote, local plumbing.Hash) (plumbing.Hash, []string, error) {
	if r.opts.Outgoing == nil || remote.IsZero() {
		return local, nil, nil // nothing on the remote to protect yet
	}
	remoteTree, err := r.objs.CommitTree(remote)
	if err != nil {
		return local, nil, err
	}
	localTree, err := r.objs.CommitTree(local)
	if err != nil {
		return local, nil, err
	}
	diffs, err := r.objs.DiffTrees(remoteTree, localTree, "", nil)
	if err != nil || len(diffs) == 0 {
		return local, nil, err
	}
	files := make([]OutgoingFile, len(diffs))
	byPath := map[string]OutgoingFile{}
	for i, d := range diffs {
		files[i] = OutgoingFile{Path: d.Path, InRemote: !d.From.Hash.IsZero(), InLocal: !d.To.Hash.IsZero(),
			remote: d.From, local: d.To, objs: r.objs}
		byPath[d.Path] = files[i]
	}
	plan, err := r.opts.Outgoing(files, OutgoingRemote{Tip: remote, r: r, tree: remoteTree})
	restore := plan.ReadOnly
	if err != nil || (len(restore) == 0 && len(plan.Readd) == 0 && len(plan.HoldBack) == 0) {
		return local, nil, err
	}
	if err := r.checkHead(); err != nil {
		return local, nil, err
	}
	lk, err := gitstore.AcquireLock(filepath.Join(r.GitDir, "index"), r.opts.LockWait, r.spares)
	if err != nil {
		return local, nil, err
	}
	defer r.indexLockTimer()()
	defer lk.Rollback()
	if cur, err := r.Head(); err != nil {
		return local, nil, err
	} else if cur != local {
		return local, nil, fmt.Errorf("%w: HEAD moved during the outgoing check", gitstore.ErrRefMoved)
	}
	ix, err := r.readIndex()
	if err != nil {
		return local, nil, err
	}
	keep := r.opts.Keep
	if keep == nil {
		keep = func(string, []byte) error { return nil }
	}
	var res CommitResult
	tip, tipTree := local, localTree
	touched := map[string]bool{}
	var done []string
	for _, p := range restore {
		f, ok := byPath[p]
		if !ok {
			continue
		}
		mine, err := f.Local()
		if err != nil {
			return local, nil, err
		}
		if mine != nil {
			if err := keep(p, mine); err != nil {
				return local, nil, err
			}
		}
		// The work tree: the remote's version back in one step; a newer
		// write the swap displaces is kept too.
		var got worktree.Displaced
		if f.InRemote {
			data, err := f.Remote()
			if err != nil {
				return local, nil, err
			}
			g, stat, err := r.files.Put(p, data, wtMode(f.remote.Mode))
			if err != nil {
				return local, nil, err
			}
			got = g
			ix.Set(p, f.remote.Hash, f.remote.Mode, stat)
		} else {
			if got, err = r.files.Take(p); err != nil {
				return local, nil, err
			}
			ix.Remove(p)
		}
		touched[p] = true
		if got.Existed && !got.Is(f.local.Hash, wtMode(f.local.Mode)) && !got.Is(f.remote.Hash, wtMode(f.remote.Mode)) {
			if err := keep(p, got.Data); err != nil {
				return local, nil, err
			}
		}
		c := gitstore.Change{Path: p}
		if f.InRemote {
			c.Hash, c.Mode = f.remote.Hash, f.remote.Mode
		}
		if tip, tipTree, err = r.commitChangesAs(r.operator(), tip, tipTree, []gitstore.Change{c}, "memfsd: restore read-only "+p, time.Now(), &res); err != nil {
			return local, nil, err
		}
		done = append(done, p)
	}
	if len(plan.Readd) > 0 {
		var changes []gitstore.Change
		for _, p := range plan.Readd {
			f, ok := byPath[p]
			if !ok || !f.InRemote {
				continue
			}
			data, err := f.Remote()
			if err != nil {
				return local, nil, err
			}
			st, err := r.writeIfAbsent(p, data, f.remote.Mode)
			if err != nil {
				return local, nil, err
			}
			ix.Set(p, f.remote.Hash, f.remote.Mode, st) // no stat when something else stands there
			touched[p] = true
			changes = append(changes, gitstore.Change{Path: p, Hash: f.remote.Hash, Mode: f.remote.Mode})
			done = append(done, p)
		}
		msg := fmt.Sprintf("memfsd: restore %d deleted files", len(changes))
		// The operator's --restore-deletes: authored by the operator.
		if tip, tipTree, err = r.commitChangesAs(r.operator(), tip, tipTree, changes, msg, time.Now(), &res); err != nil {
			return local, nil, err
		}
	}
	var heldBack []string
	if tip, tipTree, heldBack, err = r.holdBack(plan.HoldBack, byPath, ix, tip, tipTree, &res); err != nil {
		return local, nil, err
	}
	if err := r.objs.Flush(true); err != nil {
		return local, nil, err
	}
	ix.SmudgeRacy(touched)
	ixData, err := r.ixf.Encode(ix)
	if err != nil {
		return local, nil, err
	}
	if err := lk.Write(ixData, false); err != nil {
		return local, nil, err
	}
	if tip != local {
		if err := gitstore.CASRef(r.GitDir, r.branchRef(), local, tip, r.opts.LockWait, r.objs.Sync, r.spares, r.reflog("memfsd: put back before the push")); err != nil {
			return local, nil, err
		}
		r.markOwn()
	}
	if err := lk.Commit(); err != nil {
		r.log.Warn("restore landed but the index was not updated", "commit", tip.String(), "err", err)
	} else {
		r.ixf.Written(ix, ixData)
	}
	if len(done) > 0 {
		r.log.Warn("outgoing changes put back before the push (read-only blocks, or deletions the operator restored)", "paths", len(done))
	}
	if len(heldBack) > 0 {
		r.log.Warn("outgoing changes held back before the push (kept in the work tree, uncommitted)", "paths", len(heldBack))
	}
	return tip, done, nil
}

// holdBack commits, on top of tip, one `memfsd: hold back <path>` commit
// per path (OutgoingPlan.HoldBack): the remote's version back in the tree
// and in the index, the work tree left as the agent has it. The index entry
// gets no stat, so the next scan hashes the file again and finds it an
// uncommitted write, which the commit's guards judge as they judge any
// direct write (held while it breaks its front matter, committed once
// fixed). Nothing the agent wrote is moved or lost; only its commit does
// not reach the remote. Called by checkOutgoing under r.mu, with the index
// lock held.
func (r *Repo) holdBack(paths []string, byPath map[string]OutgoingFile, ix *index.Index, tip, tipTree plumbing.Hash, res *CommitResult) (plumbing.Hash, plumbing.Hash, []string, error) {
	var done []string
	for _, p := range paths {
		f, ok := byPath[p]
		if !ok {
			continue
		}
		c := gitstore.Change{Path: p}
		if f.InRemote {
			c.Hash, c.Mode = f.remote.Hash, f.remote.Mode
			ix.Set(p, f.remote.Hash, f.remote.Mode, nil)
		} else {
			ix.Remove(p)
		}
		var err error
		if tip, tipTree, err = r.commitChanges(tip, tipTree, []gitstore.Change{c}, "memfsd: hold back "+p, time.Now(), res); err != nil {
			return tip, tipTree, done, err
		}
		done = append(done, p)
	}
	return tip, tipTree, done, nil
}
