package gitmem

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/history"
)

// The repository's reads of its past are package history's, run under
// r.mu (the object store's caches are shared with the writes).

// historyReader is the repository's history.Reader.
func (r *Repo) historyReader() history.Reader {
	return history.Reader{
		Objects: r.objs, GitDir: r.GitDir, Branch: r.opts.Branch,
		Head: r.Head, Locked: r.underLock,
		Step: func() {
			if r.historyStep != nil {
				r.historyStep()
			}
		},
	}
}

// History lists the commits that changed path, newest first, at most
// limit, from the kept branch's tip (see history.Reader.Log).
func (r *Repo) History(path string, limit int) ([]history.Commit, error) {
	return r.historyReader().Log(path, limit)
}

// FileAt reads path at revision rev (see history.Reader.FileAt).
func (r *Repo) FileAt(path, rev string) (history.File, error) {
	return r.historyReader().FileAt(path, rev)
}

// ResolveRevision names a commit as git does (see history.Reader.Resolve).
func (r *Repo) ResolveRevision(rev string) (plumbing.Hash, error) {
	return r.historyReader().Resolve(rev)
}

// Trees is a history.TreeReader and HEAD's tree (zero on an unborn branch) as
// the batch found them.
func (b *Batch) Trees() (history.TreeReader, plumbing.Hash, error) {
	if b.head.IsZero() {
		return history.TreeReader{Objects: b.r.objs}, plumbing.ZeroHash, nil
	}
	tree, err := b.r.objs.CommitTree(b.head)
	return history.TreeReader{Objects: b.r.objs}, tree, err
}

// Trees is a history.TreeReader and the remote tip's tree.
func (o OutgoingRemote) Trees() (history.TreeReader, plumbing.Hash) {
	return history.TreeReader{Objects: o.r.objs}, o.tree
}

// HeadBlob is the blob id of HEAD's version (zero when not in HEAD).
func (v PathView) HeadBlob() plumbing.Hash {
	if !v.InHead {
		return plumbing.ZeroHash
	}
	return v.entry.Hash
}

// WithTreesAt runs f with a history.TreeReader and commit's tree (zero commit:
// the empty tree) under the repository's lock.
func (r *Repo) WithTreesAt(commit plumbing.Hash, f func(history.TreeReader, plumbing.Hash) error) error {
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
	return f(history.TreeReader{Objects: r.objs}, tree)
}
