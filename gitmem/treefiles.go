package gitmem

import (
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TreeFile is one file of a commit's tree.
type TreeFile struct {
	Path string
	Blob plumbing.Hash
	Mode filemode.FileMode
}

// sortedFiles lists r.flat (the last tree flattened) sorted by path.
func (r *Repo) sortedFiles() []TreeFile {
	out := make([]TreeFile, 0, len(r.flat))
	for p, e := range r.flat {
		out = append(out, TreeFile{Path: p, Blob: e.Hash, Mode: e.Mode})
	}
	slices.SortFunc(out, func(a, b TreeFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// HeadTreeFiles lists HEAD's files with their modes, sorted, and HEAD's
// commit id (zero, no files, on an unborn branch).
func (r *Repo) HeadTreeFiles() (plumbing.Hash, []TreeFile, error) {
	r.mu.Lock()
	defer r.unlock()
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return head, nil, err
	}
	if err := r.flattenCommit(head, map[string]object.TreeEntry{}); err != nil {
		return head, nil, err
	}
	return head, r.sortedFiles(), nil
}

// HeadFiles lists the files of HEAD as the guard's batch found it, sorted.
func (b *Batch) HeadFiles() ([]TreeFile, error) {
	if b.head.IsZero() {
		return nil, nil
	}
	if err := b.r.flattenCommit(b.head, map[string]object.TreeEntry{}); err != nil {
		return nil, err
	}
	return b.r.sortedFiles(), nil
}

// Blob reads a blob, under the lock the guard runs in.
func (b *Batch) Blob(h plumbing.Hash) ([]byte, error) { return b.r.objs.Blob(h) }
