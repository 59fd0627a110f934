package gitmem

import (
	"errors"
	"slices"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/indexfile"
)

// readIndex reads .git/index, through the cache. An index memfsd cannot
// parse (damaged, cut short, a format it does not know) or whose shared
// index is lost is rebuilt from HEAD (and written whole or over a new
// shared index at the next write), with a warning: otherwise no commit
// could ever be made again. A sparse index is refused instead (rebuilt,
// the files outside its cone would look deleted).
func (r *Repo) readIndex() (*index.Index, error) {
	ix, err := r.ixf.Read()
	switch {
	case err == nil:
		return ix, nil
	case errors.Is(err, index.ErrSparse):
		return nil, err
	case errors.Is(err, indexfile.ErrSharedIndexLost):
		r.log.Warn("the index links to a lost shared index; rebuilt from HEAD (staged changes in it are gone, the work tree is untouched)", "err", err)
		return r.indexFromHead()
	case errors.Is(err, index.ErrFormat):
		r.log.Warn("the index cannot be read; rebuilt from HEAD (staged changes in it are gone, the work tree is untouched)", "err", err)
		return r.indexFromHead()
	}
	return nil, err
}

// indexFromHead is the index rebuilt from HEAD's tree, every entry without
// stat data (so each file is hashed again once, as after `git read-tree
// HEAD`): what memfsd falls back to when .git/index cannot be read because
// its shared index is lost, or it cannot be parsed at all. A person's
// staged changes in it are lost with it; the work tree is untouched.
func (r *Repo) indexFromHead() (*index.Index, error) {
	ix := &index.Index{Version: 2, Dirty: true}
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return ix, err
	}
	files := map[string]object.TreeEntry{}
	if err := r.flattenCommit(head, files); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		ix.Set(p, files[p].Hash, files[p].Mode, nil)
	}
	return ix, nil
}
