package gitmem

import (
	"errors"
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
//
// The files are replaced and the new index prepared without the folder's
// index.lock, at a quiet moment (waitQuiet: not just after a person's git
// command, as the next one may follow); the branch and the index then move
// in one commit's window (indexWindow). Should that fail (a person's git
// staged meanwhile, or moved HEAD), the files stay replaced and show as
// modified: the next commit records them, and the next sync merges the
// remote's history with it.
func (r *Repo) moveBranch(old, new plumbing.Hash, why string) error {
	if err := r.checkHead(); err != nil {
		return err
	}
	if err := r.waitQuiet(); err != nil {
		return err
	}
	ix, stamp, err := r.readIndexStamped()
	if err != nil {
		return err
	}
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
	base := make(map[string]string, len(changes))
	for _, c := range changes {
		base[c.Path] = entriesKey(ix, c.Path)
	}
	touched := make(map[string]bool, len(changes))
	if r.fresh && old.IsZero() {
		if err := r.writeFresh(changes, ix); err != nil {
			return err
		}
	} else if err := r.replaceFiles(changes, ix, touched); err != nil {
		return err
	}
	for _, c := range changes {
		touched[c.Path] = true
	}
	ix.SmudgeRacy(touched)
	data, err := r.ixf.Encode(ix)
	if err != nil {
		return err
	}
	pending, err := gitstore.PrepareLock(filepath.Join(r.GitDir, "index"), data, r.spares)
	if err != nil {
		return err
	}
	defer pending.Drop()
	ref, err := gitstore.PrepareRefLater(r.GitDir, r.branchRef(), old, new, r.spares, r.reflog(why))
	if err != nil {
		return err
	}
	defer ref.Drop()
	if err := r.objs.Flush(true); err != nil {
		return err
	}
	if _, err := r.indexWindow(pending, ref, stamp, old, ix, data, touched, base); err != nil {
		if errors.Is(err, errRaced) {
			return fmt.Errorf("%w: HEAD or the index moved during the pull", gitstore.ErrRefMoved)
		}
		return err
	}
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
