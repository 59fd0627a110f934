package gitmem

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/memfsd/memfsd/ancestry"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/wire"
)

// Errors and relations of two histories are package ancestry's; these
// names keep gitmem's API as it was for its callers.
var (
	// ErrNonFastForward: the remote moved on while we committed locally.
	ErrNonFastForward = ancestry.ErrNonFastForward
	// ErrUnrelatedHistory: local and remote share no commit.
	ErrUnrelatedHistory = ancestry.ErrUnrelatedHistory
)

// Relation is how the local branch stands against the remote branch.
type Relation = ancestry.Relation

// Relations between local and remote.
const (
	Same      = ancestry.Same
	Ahead     = ancestry.Ahead
	Behind    = ancestry.Behind
	Diverged  = ancestry.Diverged
	Unrelated = ancestry.Unrelated
)

func (r *Repo) session(_ context.Context, receive bool) (transport.Session, error) {
	return wire.Session(r.Remote.URL, r.Remote.Auth, receive)
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

// relate finds how local stands against remote (see ancestry.Relate).
func (r *Repo) relate(local, remote plumbing.Hash) (Relation, error) {
	return ancestry.Relate(r.objs, local, remote)
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

	pk, err := gitstore.StagePack(ctx, filepath.Join(r.GitDir, "objects", "pack"), wire.DemuxSideband(req.Capabilities, resp), r.objs.Sync)
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
