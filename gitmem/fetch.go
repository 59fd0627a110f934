package gitmem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"

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

func (r *Repo) session(_ context.Context, receive bool) (transport.Session, error) {
	return remoteSession(r.Remote, receive)
}

// Fetch downloads the remote branch and moves the remote-tracking ref. It
// returns the remote tip, zero when the remote has no branch yet.
func (r *Repo) Fetch(ctx context.Context) (plumbing.Hash, error) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	tip, err := r.fetch(ctx)
	if err != nil {
		return tip, fmt.Errorf("fetch: %w", err)
	}
	return tip, nil
}

// fetch runs the network steps without r.mu: the ref advertisement and
// the upload-pack exchange, streamed to a temporary file under .git and
// checked and indexed there (downloadPack); then, under r.mu, the pack is
// renamed into place and the tracking ref moved.
func (r *Repo) fetch(ctx context.Context) (plumbing.Hash, error) {
	s, err := r.session(ctx, false)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sess := s.(transport.UploadPackSession)
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ref, ok := refs[plumbing.ReferenceName(r.branchRef())]
	if !ok {
		return plumbing.ZeroHash, nil
	}
	tip := ref.Hash()
	var has bool
	var haves []plumbing.Hash
	r.underLock(func() {
		if has = r.objs.Has(tip); has {
			return
		}
		for _, name := range []string{r.branchRef(), r.trackingRef()} {
			if h, err := gitstore.ReadRef(r.GitDir, name); err == nil && !h.IsZero() && r.objs.Has(h) && !slices.Contains(haves, h) {
				haves = append(haves, h)
			}
		}
	})
	// Network, and the pack's check and index: all without r.mu.
	var pk *gitstore.StagedPack
	if !has {
		if pk, err = r.downloadPack(ctx, sess, ar, tip, haves); err != nil {
			return plumbing.ZeroHash, err
		}
		defer pk.Remove()
	}
	// Local: publish the pack (two renames), move the tracking ref.
	r.mu.Lock()
	defer r.unlock()
	if pk != nil {
		if err := r.installPack(pk, tip); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("store pack: %w", err)
		}
	}
	if err := gitstore.SetRef(r.GitDir, r.trackingRef(), tip, r.opts.LockWait, r.spares); err != nil {
		return tip, err
	}
	return tip, nil
}

func demuxSideband(l *capability.List, rd io.Reader) io.Reader {
	switch {
	case l.Supports(capability.Sideband64k):
		return sideband.NewDemuxer(sideband.Sideband64k, rd)
	case l.Supports(capability.Sideband):
		return sideband.NewDemuxer(sideband.Sideband, rd)
	}
	return rd
}

// relate finds how local stands against remote. It walks both histories
// back at once, one commit each in turn, so the common cases (ahead or
// behind by a few commits) cost what the difference costs, not the history.
func (r *Repo) relate(local, remote plumbing.Hash) (Relation, error) {
	rel, _, err := r.relateBase(local, remote)
	return rel, err
}

// relateBase is relate that also returns, for Diverged, the commit where
// the two walks met (the merge base of linear histories).
func (r *Repo) relateBase(local, remote plumbing.Hash) (Relation, plumbing.Hash, error) {
	switch {
	case local == remote:
		return Same, local, nil
	case local.IsZero():
		return Behind, local, nil
	case remote.IsZero():
		return Ahead, remote, nil
	}
	fromLocal := newWalker(r.objs, local)
	fromRemote := newWalker(r.objs, remote)
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

// walker visits a commit's ancestors breadth-first.
type walker struct {
	objs  *objectStore
	queue []plumbing.Hash
	seen  map[plumbing.Hash]bool
	order []plumbing.Hash
	fresh []plumbing.Hash // commits first seen by the last step
}

func newWalker(objs *objectStore, start plumbing.Hash) *walker {
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

// PullResult says what a pull did.
type PullResult struct {
	Relation   Relation // before the pull
	Head       plumbing.Hash
	RemoteHead plumbing.Hash
	Updated    bool // fast-forwarded
}

// Pull fetches and fast-forwards when the branch is only behind. Ahead is
// fine (a push is due). Diverged and unrelated histories are reported as
// ErrNonFastForward / ErrUnrelatedHistory without touching the work tree.
func (r *Repo) Pull(ctx context.Context) (PullResult, error) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	remote, err := r.fetch(ctx)
	if err != nil {
		return PullResult{}, fmt.Errorf("pull: fetch: %w", err)
	}
	r.lockWork()
	defer r.unlockWork()
	local, err := r.Head()
	if err != nil {
		return PullResult{}, fmt.Errorf("pull: %w", err)
	}
	res := PullResult{Head: local, RemoteHead: remote}
	if res.Relation, err = r.relate(local, remote); err != nil {
		return res, fmt.Errorf("pull: %w", err)
	}
	switch res.Relation {
	case Behind:
		if err := r.moveBranch(local, remote, "memfsd: pull: fast-forward"); err != nil {
			return res, fmt.Errorf("pull: fast-forward: %w", err)
		}
		res.Head, res.Updated = remote, true
	case Diverged:
		return res, fmt.Errorf("pull: %w", ErrNonFastForward)
	case Unrelated:
		return res, fmt.Errorf("pull: %w", ErrUnrelatedHistory)
	}
	return res, nil
}

// A fetch downloads its pack without the repo lock: the response is
// streamed into a temporary file under objects/pack, checked and indexed
// there, and only the two renames that publish it (and a re-read of the
// pack list) happen under the lock.

// downloadPack asks upload-pack for tip and writes the pack it sends into a
// temporary file, then builds its index beside it. It touches neither the
// object store nor go-git's storage, so it runs without mu. The pack is
// never thin (go-git's transports filter thin-pack out of what they ask
// for), so every delta base is inside the pack itself.
func (r *Repo) downloadPack(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, tip plumbing.Hash, haves []plumbing.Hash) (_ *gitstore.StagedPack, err error) {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	req.Wants = []plumbing.Hash{tip}
	req.Haves = haves
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Close()

	pk, err := gitstore.StagePack(ctx, filepath.Join(r.GitDir, "objects", "pack"), demuxSideband(req.Capabilities, resp), r.objs.Sync)
	if err != nil {
		return nil, fmt.Errorf("download pack: %w", err)
	}
	return pk, nil
}

// installPack publishes a downloaded pack under its checksum name (pack
// first, then the index that makes git see it), re-reads the pack list and
// checks that tip arrived. With mu held.
func (r *Repo) installPack(pk *gitstore.StagedPack, tip plumbing.Hash) error {
	if err := pk.Publish(filepath.Join(r.GitDir, "objects", "pack"), r.objs.Sync); err != nil {
		return err
	}
	r.st.ObjectStorage.Reindex()
	if !r.objs.Has(tip) {
		return fmt.Errorf("the remote's pack lacks its tip %s", gitstore.Short(tip))
	}
	return nil
}
