package shared

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/worktree"
)

// viewLeaseWait is how long replacing a view file waits for the agent's
// other processes to close it before it falls back to the exchange.
const viewLeaseWait = 200 * time.Millisecond

// replaceViewFile makes the view's file rel hold data (absent when
// !present) if it still holds exactly cur (blob got, "" when absent), and
// reports whether it did; false leaves the agent's newer write there. As a
// pull replaces work files (docs/errors.md, What a replace guarantees): under a
// write lease, read, compare and written in place; without one, swapped
// in by rename-exchange and an agent's write it displaced put back.
// leased, when set (tests only), runs under the lease once the file is
// compared, before it is written or removed. wrote, when the file was
// written in place, gets the modification time the write left on it.
func replaceViewFile(wt *worktree.Dir, rel, got string, cur, data []byte, present bool, leased func(), wrote *time.Time) (bool, error) {
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
		if leased != nil {
			leased()
		}
		// The agent may rename its own file over the name while the lease
		// is held (a rename opens nothing, so it does not wait): the file
		// written or removed below is then no longer the view's. Each act
		// is checked against the leased inode (its number cannot be reused
		// while l holds it open).
		if !present {
			return removeLeased(wt, rel, l.Stat())
		}
		st, err := l.Write(data, false)
		if err != nil {
			return false, err
		}
		// data went into the file the agent's rename displaced: the view
		// never got it. Reporting it given would make data the base of the
		// agent's write, and merging that write would undo data's changes
		// (another agent's edit).
		if !sameInode(wt, rel, st) {
			return false, nil // the agent's file stands: taken next
		}
		*wrote = time.Unix(st.Mtim.Unix())
		return true, nil
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

// sameInode reports whether rel names the file whose stat is st.
func sameInode(wt *worktree.Dir, rel string, st *syscall.Stat_t) bool {
	at, err := wt.Lstat(rel)
	return err == nil && at.Dev == st.Dev && at.Ino == st.Ino
}

// removeLeased removes the view file rel, leased with stat st: moved
// aside (into the view's temporary folder, out of the tree) first, then
// removed only if it is the leased file. A file the agent renamed over the
// name meanwhile is put back (false: taken next), never removed; if the
// agent wrote yet another since, that newer one stands and the one aside
// goes.
func removeLeased(wt *worktree.Dir, rel string, st *syscall.Stat_t) (bool, error) {
	aside, err := wt.MoveAside(rel, "view")
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil // gone meanwhile: the agent's deletion, taken next
		}
		return false, err
	}
	if at, err := aside.Lstat(); err == nil && at.Dev == st.Dev && at.Ino == st.Ino {
		return true, aside.Remove()
	}
	if err := aside.PutBack(rel, unix.RENAME_NOREPLACE); err != nil {
		if !errors.Is(err, unix.EEXIST) {
			return false, err
		}
		_ = aside.Remove()
	}
	return false, nil
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
			if skip, _ := worktree.Skip(rel, e.IsDir()); skip || e.IsLink() {
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

func (a *Unit) viewBaseDir(id string) string {
	return filepath.Join(a.cfg.Home, "agents", id, "records", "shared-view-"+a.ID+".bases")
}

// keepViewBase keeps data (blob id h) as a base of view v.
func (a *Unit) keepViewBase(v *view, h string, data []byte) error {
	p := filepath.Join(a.viewBaseDir(v.id), h)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return agent.WriteRecord(p, data)
}

// viewBase reads base h of view v: kept beside the record, or a blob.
func (a *Unit) viewBase(repo *gitmem.Repo, v *view, h string) ([]byte, error) {
	if data, err := os.ReadFile(filepath.Join(a.viewBaseDir(v.id), h)); err == nil {
		return data, nil
	}
	return repo.Blob(plumbing.NewHash(h))
}

// pruneViewBases drops the kept bases v's record no longer names.
func (a *Unit) pruneViewBases(v *view) {
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
