package gitmem

import (
	"fmt"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/worktree"
)

// RestoreMissing writes HEAD's version of each path that is missing from
// the work tree (a file that is there, whoever wrote it, is left alone) and
// returns the paths it wrote back. The caller holds opts.WorkLock.
func (r *Repo) RestoreMissing(paths []string) ([]string, error) {
	r.mu.Lock()
	defer r.unlock()
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return nil, err
	}
	tree, err := r.objs.CommitTree(head)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		p, err := worktree.Clean(p)
		if err != nil {
			return out, err
		}
		e, ok, err := r.objs.entryAt(tree, p)
		if err != nil {
			return out, err
		}
		if _, err := r.wt.Lstat(p); !ok || err == nil {
			continue
		}
		data, err := r.objs.Blob(e.Hash)
		if err != nil {
			return out, err
		}
		st, err := r.writeIfAbsent(p, data, e.Mode)
		if err != nil {
			return out, err
		}
		if st != nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// writeIfAbsent writes data at rel when nothing stands there and returns
// its stat; a file the agent put there meanwhile is left alone (nil stat).
func (r *Repo) writeIfAbsent(rel string, data []byte, mode filemode.FileMode) (*syscall.Stat_t, error) {
	st, err := r.files.CreateIfAbsent(rel, data, wtMode(mode))
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", rel, err)
	}
	return st, nil
}
