package history

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitstore"
)

// TreeReader reads trees and blobs for a guard or an outgoing check,
// under the lock it runs in.
type TreeReader struct{ Objects *gitstore.Objects }

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
	diffs, err := t.Objects.DiffTrees(from, to, "", nil)
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
	data, err := t.Objects.Blob(h)
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}
