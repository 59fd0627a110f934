package gitmem

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/worktree"
)

// Every read, write, exchange and removal of a work file goes through r.wt,
// the memory folder held open (worktree.Dir): relative to its descriptor,
// never through a symbolic link the agent may swap in between a check and
// an act. This file holds the engine's work-file steps on top of it.

func gitMode(m worktree.Mode) filemode.FileMode {
	switch m {
	case worktree.Executable:
		return filemode.Executable
	case worktree.Symlink:
		return filemode.Symlink
	}
	return filemode.Regular
}

func wtMode(m filemode.FileMode) worktree.Mode {
	switch m {
	case filemode.Executable:
		return worktree.Executable
	case filemode.Symlink:
		return worktree.Symlink
	}
	return worktree.Regular
}

func toDisplaced(f *worktree.File) displaced {
	if f == nil {
		return displaced{}
	}
	data := f.Data
	if data == nil {
		data = []byte{}
	}
	return displaced{existed: true, data: data, mode: gitMode(f.Mode)}
}

func isDirStat(st *syscall.Stat_t) bool {
	return st != nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

// parentOf is rel's folder ("" for the root).
func parentOf(rel string) string {
	d := path.Dir(rel)
	if d == "." {
		return ""
	}
	return d
}

// readWorkFile reads rel from the work tree; nil when it does not exist,
// is a folder, or lies behind a symbolic link (not a file of the tree).
func (r *Repo) readWorkFile(rel string) (*fileState, error) {
	f, err := r.wt.Read(rel)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if f == nil {
		return nil, nil
	}
	d := toDisplaced(f)
	return &fileState{data: d.data, mode: d.mode, st: f.Stat}, nil
}

// readDisplacedAt reads what stands at rel; absent is not an error.
func (r *Repo) readDisplacedAt(rel string) (displaced, error) {
	f, err := r.wt.Read(rel)
	return toDisplaced(f), err
}

// writeWorkFile writes a blob into the work tree in one step (mode 0600,
// or 0700 for executables; folders 0700) and returns its stat for the
// index. A folder standing where the file goes is removed when empty and
// moved aside when it holds the agent's files; so is a file standing where
// a folder goes.
func (r *Repo) writeWorkFile(rel string, data []byte, mode filemode.FileMode) (*syscall.Stat_t, error) {
	if err := r.makeWay(rel); err != nil {
		return nil, fmt.Errorf("write %s: %w", rel, err)
	}
	st, err := r.wt.WriteFile(rel, data, wtMode(mode), false)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", rel, err)
	}
	return st, nil
}

// makeWay readies rel's place for a file: real folders up to it (a link or
// a file standing where one goes is moved aside), and no folder at it.
func (r *Repo) makeWay(rel string) error {
	if err := r.realParents(rel); err != nil {
		return err
	}
	if dir := parentOf(rel); dir != "" {
		if err := r.wt.MkdirAll(dir); err != nil {
			if err := r.replaceFileWithDir(dir); err != nil {
				return err
			}
		}
	}
	if st, err := r.wt.Lstat(rel); err == nil && isDirStat(st) {
		return r.clearDir(rel)
	}
	return nil
}

// replaceFileWithDir makes the folder dir where a file stands on its path:
// the tree's deletion of that file came first and it is back, so it is the
// agent's, kept beside as a conflict copy.
func (r *Repo) replaceFileWithDir(dir string) error {
	for p := dir; p != ""; p = parentOf(p) {
		if st, err := r.wt.Lstat(p); err == nil && !isDirStat(st) {
			if err := r.moveAside(p); err != nil {
				return err
			}
			break
		}
	}
	return r.wt.MkdirAll(dir)
}

// clearDir makes way for a file where a folder stands: an empty folder is
// removed, one still holding files (the agent's) is moved aside.
func (r *Repo) clearDir(rel string) error {
	if err := r.wt.Remove(rel); err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return r.moveAside(rel)
}

// moveAside renames what stands at rel (a file, a link, or a folder holding
// the agent's files) to a conflict-copy name beside it, so the tree can put
// something else there without destroying it; the copy is committed next.
func (r *Repo) moveAside(rel string) error {
	seed := blobHash([]byte(fmt.Sprintf("%s %d", rel, time.Now().UnixNano())))
	if err := r.wt.Rename(rel, ConflictName(rel, seed), unix.RENAME_NOREPLACE); err != nil {
		return fmt.Errorf("move %s aside: %w", rel, err)
	}
	return nil
}

// symlinkedParent returns the first folder on rel's path that is a symbolic
// link (relative to the work tree), "" when none: a write through it would
// land outside the work tree (an agent's `ln -s .. esc`).
func (r *Repo) symlinkedParent(rel string) string {
	for p, rest := "", rel; ; {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return ""
		}
		if p == "" {
			p = rest[:i]
		} else {
			p += "/" + rest[:i]
		}
		rest = rest[i+1:]
		st, err := r.wt.Lstat(p)
		if err != nil {
			return "" // missing from here on: MkdirAll makes real folders
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return p
		}
		if !isDirStat(st) {
			return ""
		}
	}
}

// realParents makes sure nothing written at rel goes through a symbolic
// link: a link standing where a folder of the tree goes is moved aside (it
// is committed next as the agent's), then the folder is made for real. The
// writes themselves refuse any link on the path (worktree.Dir); this turns
// that refusal into a tree that can be written.
func (r *Repo) realParents(rel string) error {
	for i := 0; i < 64; i++ {
		link := r.symlinkedParent(rel)
		if link == "" {
			return nil
		}
		if err := r.moveAside(link); err != nil {
			return err
		}
		r.log.Warn("a symbolic link stood where the tree has a folder; moved aside", "link", link)
	}
	return fmt.Errorf("%s: too many symbolic links on the path", rel)
}

// noExchange is set once the filesystem refuses RENAME_EXCHANGE; from then
// on the fallback replace reads first and renames over (a small window in
// which an agent's write can be displaced unseen).
var noExchange atomic.Bool

// renameByExchange puts data at rel in one step and returns exactly what it
// displaced: the new version is written to a temporary file beside it and
// swapped in with renameat2(RENAME_EXCHANGE), so a write that finished
// before is displaced (and returned, for the caller to check and put back)
// or lands on the new version afterwards. A write through a descriptor
// opened before the swap lands in the displaced file: the lease
// (replaceWorkFile) is what closes that window.
func (r *Repo) renameByExchange(rel string, data []byte, mode filemode.FileMode) (displaced, *syscall.Stat_t, error) {
	if err := r.makeWay(rel); err != nil {
		return displaced{}, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	for {
		if noExchange.Load() {
			old, err := r.readDisplacedAt(rel)
			if err != nil {
				return old, nil, fmt.Errorf("write %s: %w", rel, err)
			}
			st, err := r.wt.WriteFile(rel, data, wtMode(mode), false)
			if err != nil {
				return old, nil, fmt.Errorf("write %s: %w", rel, err)
			}
			return old, st, nil
		}
		f, st, err := r.wt.Exchange(rel, data, wtMode(mode))
		if errors.Is(err, worktree.ErrNoExchange) {
			if !noExchange.Swap(true) {
				r.log.Warn("the filesystem has no rename-exchange: replacing work-tree files by read-then-rename", "err", err)
			}
			continue
		}
		if err != nil {
			return displaced{}, nil, fmt.Errorf("write %s: %w", rel, err)
		}
		return toDisplaced(f), st, nil
	}
}

// takeByRename removes rel in one step (renamed aside, then read) and
// returns what it removed; folders it leaves empty go too.
func (r *Repo) takeByRename(rel string) (displaced, error) {
	if r.symlinkedParent(rel) != "" {
		return displaced{}, nil // not in the work tree: nothing of ours to take
	}
	if st, err := r.wt.Lstat(rel); err != nil || isDirStat(st) {
		return displaced{}, nil
	}
	aside := r.asideName(rel)
	if err := r.wt.Rename(rel, aside, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return displaced{}, nil
		}
		return displaced{}, fmt.Errorf("delete %s: %w", rel, err)
	}
	old, err := r.readDisplacedAt(aside)
	if err != nil {
		// Put it back rather than lose it.
		_ = r.wt.Rename(aside, rel, unix.RENAME_NOREPLACE)
		return old, fmt.Errorf("delete %s: %w", rel, err)
	}
	r.wt.Remove(aside)
	r.removeEmptyParents(rel)
	return old, nil
}

var asideSeq atomic.Int64

// asideName is a temporary name for rel taken aside: in worktree.TempDir,
// where no tree path can be (a crash leaves it to RecoverLeftovers).
func (r *Repo) asideName(rel string) string {
	return worktree.TempDir + "/" + worktree.TempName("take")
}

// removeEmptyParents removes the folders above rel that it left empty.
func (r *Repo) removeEmptyParents(rel string) {
	for d := parentOf(rel); d != ""; d = parentOf(d) {
		if r.wt.Remove(d) != nil {
			break
		}
	}
}

// sameFile reports whether rel names the file whose stat is st.
func (r *Repo) sameFile(rel string, st *syscall.Stat_t) bool {
	now, err := r.wt.Lstat(rel)
	return err == nil && now.Dev == st.Dev && now.Ino == st.Ino
}

// keepCopy puts data beside rel as a conflict copy (unless one with the same
// bytes is there already) and returns its path.
func (r *Repo) keepCopy(rel string, data []byte, mode filemode.FileMode) (string, error) {
	copyRel := ConflictName(rel, blobHash(data))
	if _, _, err := r.wt.Create(copyRel, data, wtMode(mode)); err != nil {
		return copyRel, fmt.Errorf("keep %s: %w", copyRel, err)
	}
	return copyRel, nil
}
