package gitmem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/wire"
	"github.com/memfsd/memfsd/worktree"
)

// A proposal is a commit beside the branch: files written on top of a
// base commit, under a ref of its own (refs/heads/proposals/...), never
// touching the branch, the index or the work tree; pushed as a new branch
// of that name for a person to merge with plain git.

// CommitOnto writes one commit of files (path → content, nil deletes) on
// top of base, by who, and points ref (a full ref name) at it.
func (r *Repo) CommitOnto(ref string, base plumbing.Hash, files map[string][]byte, message string, who Signature) (plumbing.Hash, error) {
	if !strings.HasPrefix(ref, "refs/heads/") || ref == r.branchRef() {
		return plumbing.ZeroHash, fmt.Errorf("commit onto %s: want a branch other than %s", ref, r.branchRef())
	}
	r.mu.Lock()
	defer r.unlock()
	var baseTree plumbing.Hash
	var parents []plumbing.Hash
	if !base.IsZero() {
		t, err := r.objs.CommitTree(base)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("commit onto %s: %w", ref, err)
		}
		baseTree, parents = t, []plumbing.Hash{base}
	}
	changes := make([]gitstore.Change, 0, len(files))
	for p, data := range files {
		c, err := worktree.Clean(p)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("commit onto %s: %w", ref, err)
		}
		ch := gitstore.Change{Path: c}
		if data != nil {
			if ch.Hash, err = r.objs.Write(plumbing.BlobObject, data); err != nil {
				return plumbing.ZeroHash, fmt.Errorf("commit onto %s: %w", ref, err)
			}
			ch.Mode = filemode.Regular
		}
		changes = append(changes, ch)
	}
	slices.SortFunc(changes, func(x, y gitstore.Change) int { return strings.Compare(x.Path, y.Path) })
	tree, err := r.objs.ApplyChanges(baseTree, changes)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit onto %s: %w", ref, err)
	}
	sig := object.Signature{Name: who.Name, Email: who.Email, When: time.Now()}
	h, err := r.objs.Write(plumbing.CommitObject, codec.EncodeCommit(tree, parents, sig, sig, message))
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit onto %s: %w", ref, err)
	}
	// Staged objects reach the disk only by a flush: the ref must not
	// point at a commit that lives in memory (syncAll alone left it so).
	if err := r.objs.Flush(true); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit onto %s: %w", ref, err)
	}
	if err := gitstore.SetRef(r.GitDir, ref, h, r.opts.LockWait, r.spares); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit onto %s: %w", ref, err)
	}
	r.markOwn()
	return h, nil
}

// PushNewBranch sends commit h (one commit over a parent the remote has)
// as the new remote branch ref: the server refuses it when the branch
// exists (compare-and-swap from absent).
func (r *Repo) PushNewBranch(ctx context.Context, ref string, h plumbing.Hash) error {
	var pack []byte
	var err error
	r.underLock(func() { pack, _, err = wire.BuildPack(r.objs, []plumbing.Hash{h}) })
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	s, err := r.session(ctx, true)
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	sess := s.(transport.ReceivePackSession)
	defer sess.Close()
	if err := wire.SendUpdate(ctx, sess, capability.NewList(), ref, plumbing.ZeroHash, h, pack); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}
