package gitmem

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// moveBranch moves the branch from old to new and brings the work tree and
// index along, file by file. A file changed in the work tree since old (an
// agent writing during a sync) is never overwritten: it stays as written,
// shows as modified, and the next commit takes it.
func (r *Repo) moveBranch(old, new plumbing.Hash) error {
	if err := r.checkHead(); err != nil {
		return err
	}
	lk, err := acquireLock(filepath.Join(r.GitDir, "index"), r.opts.LockWait, r.spares)
	if err != nil {
		return err
	}
	defer lk.rollback()
	if cur, err := r.Head(); err != nil {
		return err
	} else if cur != old {
		return fmt.Errorf("%w: HEAD moved during the pull", ErrRefMoved)
	}
	var oldTree plumbing.Hash
	if !old.IsZero() {
		c, err := r.objs.commit(old)
		if err != nil {
			return err
		}
		oldTree = c.TreeHash
	}
	nc, err := r.objs.commit(new)
	if err != nil {
		return err
	}
	changes, err := r.objs.diffTrees(oldTree, nc.TreeHash, "", nil)
	if err != nil {
		return err
	}
	ix, err := readRawIndex(filepath.Join(r.GitDir, "index"))
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, c := range changes {
		abs := filepath.Join(r.Dir, filepath.FromSlash(c.Path))
		if _, err := os.Lstat(abs); err != nil {
			continue // absent: nothing local to lose
		}
		h, mode, err := r.workHash(c.Path, abs, ix)
		if err != nil {
			return err
		}
		if (h == c.From.Hash && mode == c.From.Mode) || (h == c.To.Hash && mode == c.To.Mode) {
			continue
		}
		kept[c.Path] = true
		r.log.Info("kept a file changed during sync; it will be committed next", "path", c.Path)
	}
	touched := make(map[string]bool, len(changes))
	for _, c := range changes {
		touched[c.Path] = true
		if kept[c.Path] {
			if c.To.Hash.IsZero() {
				ix.remove(c.Path)
			} else {
				ix.set(c.Path, c.To.Hash, c.To.Mode, nil) // no stat: git re-reads it
			}
			continue
		}
		if c.To.Hash.IsZero() {
			if err := r.removeWorkFile(c.Path); err != nil {
				return err
			}
			ix.remove(c.Path)
			continue
		}
		data, err := r.objs.blob(c.To.Hash)
		if err != nil {
			return err
		}
		st, err := r.writeWorkFile(c.Path, data, c.To.Mode)
		if err != nil {
			return err
		}
		ix.set(c.Path, c.To.Hash, c.To.Mode, st)
	}
	ix.smudgeRacy(touched)
	if err := lk.write(ix.encode(), false); err != nil {
		return err
	}
	if err := casRef(r.GitDir, r.branchRef(), old, new, r.opts.LockWait, r.objs.sync, r.spares); err != nil {
		return err
	}
	return lk.commit()
}
