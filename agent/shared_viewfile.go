package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/worktree"
)

// viewLeaseWait is how long replacing a view file waits for the agent's
// other processes to close it before it falls back to the exchange.
const viewLeaseWait = 200 * time.Millisecond

// replaceViewFile makes the view's file rel hold data (absent when
// !present) if it still holds exactly cur (blob got, "" when absent), and
// reports whether it did; false leaves the agent's newer write there. As a
// pull replaces work files (README, What a replace guarantees): under a
// write lease, read, compare and written in place; without one, swapped
// in by rename-exchange and an agent's write it displaced put back.
func replaceViewFile(wt *worktree.Dir, rel, got string, cur, data []byte, present bool) (bool, error) {
	if got == "" {
		if !present {
			return true, nil
		}
		_, created, err := wt.Create(rel, data, worktree.Regular)
		return created, err
	}
	l, err := wt.Lease(rel, viewLeaseWait)
	if err == nil {
		defer l.Release()
		now, err := l.Read()
		if err != nil {
			return false, err
		}
		if !bytes.Equal(now, cur) || l.BreakPending() {
			return false, nil // the agent wrote meanwhile, or is about to
		}
		if !present {
			return true, wt.Remove(rel)
		}
		_, err = l.Write(data, false)
		return err == nil, err
	}
	if !errors.Is(err, worktree.ErrNoLease) && !errors.Is(err, worktree.ErrBusy) && !errors.Is(err, worktree.ErrNotOwner) && !errors.Is(err, worktree.ErrNotFile) {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil // gone meanwhile: the agent's deletion, taken next
		}
		return false, err
	}
	if !present {
		f, err := wt.Read(rel)
		if err != nil || f == nil || !bytes.Equal(f.Data, cur) {
			return false, err
		}
		return true, wt.Remove(rel)
	}
	old, _, err := wt.Exchange(rel, data, worktree.Regular)
	if err != nil {
		return false, err
	}
	if old != nil && old.Mode != worktree.Symlink && bytes.Equal(old.Data, cur) {
		return true, nil
	}
	// The agent wrote between: its file goes back.
	if old == nil {
		return false, wt.Remove(rel)
	}
	_, _, err = wt.Exchange(rel, old.Data, old.Mode)
	return false, err
}

// walkView lists the files in the view (links and what git cannot track
// left out), as slash paths.
func walkView(wt *worktree.Dir) ([]string, error) {
	var out []string
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > 64 {
			return nil
		}
		entries, err := wt.ReadDir(dir)
		if err != nil {
			if dir == "" {
				return err
			}
			return nil // gone meanwhile, or a link now
		}
		for _, e := range entries {
			rel := e.Name
			if dir != "" {
				rel = dir + "/" + e.Name
			}
			if skip, _ := worktree.Skip(rel, e.IsDir()); skip || e.IsLink() || strings.HasPrefix(e.Name, worktree.TempPrefix) {
				continue
			}
			if e.IsDir() {
				if err := walk(rel, depth+1); err != nil {
					return err
				}
				continue
			}
			out = append(out, rel)
		}
		return nil
	}
	return out, walk("", 0)
}

// The version a view was given is the base of the next three-way merge of
// the agent's write. Usually it is a blob of the shared repository; when
// it is the agent's own bytes (taken, then merged, restored or refused,
// and not yet replaced in the view) it is kept beside the view's record,
// by blob id, until the record no longer names it.

func (a *Agent) viewBaseDir(id string) string {
	return filepath.Join(a.cfg.Home, "agents", id, "records", "shared-view-"+a.ID+".bases")
}

// keepViewBase keeps data (blob id h) as a base of view v.
func (a *Agent) keepViewBase(v *view, h string, data []byte) error {
	p := filepath.Join(a.viewBaseDir(v.id), h)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return writeRecord(p, data)
}

// viewBase reads base h of view v: kept beside the record, or a blob.
func (a *Agent) viewBase(repo *gitmem.Repo, v *view, h string) ([]byte, error) {
	if data, err := os.ReadFile(filepath.Join(a.viewBaseDir(v.id), h)); err == nil {
		return data, nil
	}
	return repo.Blob(plumbing.NewHash(h))
}

// pruneViewBases drops the kept bases v's record no longer names.
func (a *Agent) pruneViewBases(v *view) {
	dir := a.viewBaseDir(v.id)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	named := map[string]bool{}
	for _, h := range v.rec.Files {
		named[h] = true
	}
	for _, e := range ents {
		if !named[e.Name()] {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
