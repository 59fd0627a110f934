package gitmem

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/worktree"
)

// moveBranch moves the branch from old to new and brings the work tree and
// index along, file by file. A file changed in the work tree since old (an
// agent writing during a sync) is never overwritten: it stays as written,
// shows as modified, and the next commit takes it.
func (r *Repo) moveBranch(old, new plumbing.Hash, why string) error {
	if err := r.checkHead(); err != nil {
		return err
	}
	lk, err := gitstore.AcquireLock(filepath.Join(r.GitDir, "index"), r.opts.LockWait, r.spares)
	if err != nil {
		return err
	}
	defer lk.Rollback()
	if cur, err := r.Head(); err != nil {
		return err
	} else if cur != old {
		return fmt.Errorf("%w: HEAD moved during the pull", gitstore.ErrRefMoved)
	}
	var oldTree plumbing.Hash
	if !old.IsZero() {
		c, err := r.objs.Commit(old)
		if err != nil {
			return err
		}
		oldTree = c.TreeHash
	}
	nc, err := r.objs.Commit(new)
	if err != nil {
		return err
	}
	changes, err := r.objs.DiffTrees(oldTree, nc.TreeHash, "", nil)
	if err != nil {
		return err
	}
	// Deletions first: a folder the tree turns into a file (or the other
	// way round) is emptied of what it tracked, checked, before the new
	// entry needs its place.
	slices.SortStableFunc(changes, func(x, y gitstore.FileChange) int {
		xd, yd := x.To.Hash.IsZero(), y.To.Hash.IsZero()
		switch {
		case xd && !yd:
			return -1
		case yd && !xd:
			return 1
		}
		return strings.Compare(x.Path, y.Path)
	})
	for _, c := range changes {
		if _, err := worktree.Clean(c.Path); err != nil {
			return fmt.Errorf("the tree of %s has a path memfsd will not write: %w", gitstore.Short(new), err)
		}
	}
	ix, err := r.readIndex()
	if err != nil {
		return err
	}
	touched := make(map[string]bool, len(changes))
	if r.fresh && old.IsZero() {
		if err := r.writeFresh(changes, ix); err != nil {
			return err
		}
	} else if err := r.replaceFiles(changes, ix, touched); err != nil {
		return err
	}
	ix.SmudgeRacy(touched)
	data, err := r.ixf.Encode(ix)
	if err != nil {
		return err
	}
	if err := lk.Write(data, false); err != nil {
		return err
	}
	if err := gitstore.CASRef(r.GitDir, r.branchRef(), old, new, r.opts.LockWait, r.objs.Sync, r.spares, r.reflog(why)); err != nil {
		return err
	}
	if err := lk.Commit(); err != nil {
		return err
	}
	r.ixf.Written(ix, data)
	return nil
}

// replaceFiles brings the work tree from one tree to the next, change by
// change, and records each in ix and touched.
func (r *Repo) replaceFiles(changes []gitstore.FileChange, ix *index.Index, touched map[string]bool) error {
	// Each file is checked and replaced in one step (worktree.Files.Pull): what
	// stands there is read while no one else can write it, and anything
	// other than the old or the new version is an agent's write that landed
	// during the sync. It is merged with the new version where the lines
	// allow, else left as written; either way it shows as modified, and the
	// next commit takes it.
	for _, c := range changes {
		touched[c.Path] = true
		u := worktree.Update{From: c.From.Hash, To: c.To.Hash, FromMode: wtMode(c.From.Mode), ToMode: wtMode(c.To.Mode)}
		if !c.To.Hash.IsZero() {
			var err error
			if u.Data, err = r.objs.Blob(c.To.Hash); err != nil {
				return err
			}
		}
		pulled, err := r.files.Pull(c.Path, u)
		if err != nil {
			return err
		}
		st := pulled.Stat
		if pulled.Kept {
			r.log.Info("kept a file changed during sync; it will be committed next", "path", c.Path)
			st = nil // no stat: git and the next scan re-read it
		}
		if c.To.Hash.IsZero() {
			ix.Remove(c.Path)
		} else {
			ix.Set(c.Path, c.To.Hash, c.To.Mode, st)
		}
	}
	return nil
}

// writeFresh writes every file of a first checkout into the clone's own
// temporary folder (worktree.WriteFresh) and records them in ix.
func (r *Repo) writeFresh(changes []gitstore.FileChange, ix *index.Index) error {
	files := make([]worktree.FreshFile, len(changes))
	for i, c := range changes {
		files[i] = worktree.FreshFile{Path: c.Path, Blob: c.To.Hash, Mode: wtMode(c.To.Mode)}
	}
	stats, err := worktree.WriteFresh(r.Dir, files, r.objs)
	if err != nil {
		return err
	}
	for i, c := range changes {
		ix.Set(c.Path, c.To.Hash, c.To.Mode, stats[i])
	}
	return nil
}
