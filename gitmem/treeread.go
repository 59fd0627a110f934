package gitmem

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TreeReader reads trees and blobs for a guard or an outgoing check,
// under the lock it runs in.
type TreeReader struct{ objs *objectStore }

// TreeChange is a file that differs between two trees; a zero blob on a
// side means the file is absent there.
type TreeChange struct {
	Path             string
	FromBlob, ToBlob plumbing.Hash
	FromMode, ToMode filemode.FileMode
}

// Diff lists the files that differ between trees from and to (zero: the
// empty tree), descending only into subtrees that differ: O(change).
func (t TreeReader) Diff(from, to plumbing.Hash) ([]TreeChange, error) {
	diffs, err := t.objs.DiffTrees(from, to, "", nil)
	if err != nil {
		return nil, err
	}
	out := make([]TreeChange, len(diffs))
	for i, d := range diffs {
		out[i] = TreeChange{Path: d.Path, FromBlob: d.From.Hash, ToBlob: d.To.Hash, FromMode: d.From.Mode, ToMode: d.To.Mode}
	}
	return out, nil
}

// Blob reads a blob.
func (t TreeReader) Blob(h plumbing.Hash) ([]byte, error) {
	data, err := t.objs.Blob(h)
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}

// Trees is a TreeReader and HEAD's tree (zero on an unborn branch) as
// the batch found them.
func (b *Batch) Trees() (TreeReader, plumbing.Hash, error) {
	if b.head.IsZero() {
		return TreeReader{b.r.objs}, plumbing.ZeroHash, nil
	}
	tree, err := b.r.objs.CommitTree(b.head)
	return TreeReader{b.r.objs}, tree, err
}

// Trees is a TreeReader and the remote tip's tree.
func (o OutgoingRemote) Trees() (TreeReader, plumbing.Hash) { return TreeReader{o.r.objs}, o.tree }

// HeadBlob is the blob id of HEAD's version (zero when not in HEAD).
func (v PathView) HeadBlob() plumbing.Hash {
	if !v.InHead {
		return plumbing.ZeroHash
	}
	return v.entry.Hash
}

// WithTreesAt runs f with a TreeReader and commit's tree (zero commit:
// the empty tree) under the repository's lock.
func (r *Repo) WithTreesAt(commit plumbing.Hash, f func(TreeReader, plumbing.Hash) error) error {
	r.mu.Lock()
	defer r.unlock()
	var tree plumbing.Hash
	if !commit.IsZero() {
		t, err := r.objs.CommitTree(commit)
		if err != nil {
			return err
		}
		tree = t
	}
	return f(TreeReader{r.objs}, tree)
}
