package gitmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/internal/atomicfile"
	"github.com/memfsd/memfsd/worktree"
)

// ErrBadPath is returned for a path that is not a memory path (see
// worktree.Check): it is worktree.ErrUntrackable, so either matches.
var ErrBadPath = worktree.ErrUntrackable

// cleanPath checks a work-tree-relative path by the one rule
// (worktree.Check) and returns it as a slash path.
func cleanPath(p string) (string, error) {
	p = filepath.ToSlash(p)
	if err := worktree.Check(p); err != nil {
		return "", err
	}
	return p, nil
}

// fileState is a work-tree file read for a commit: its blob content, mode
// and the stat taken before reading (so a change after the read shows).
type fileState struct {
	data []byte
	mode filemode.FileMode
	st   *syscall.Stat_t
}

// readWorkFile reads rel from the work tree; nil when it does not exist.
func (r *Repo) readWorkFile(rel string) (*fileState, error) {
	if r.symlinkedParent(rel) != "" {
		return nil, nil // behind a symbolic link: not a file of the tree
	}
	abs := filepath.Join(r.Dir, filepath.FromSlash(rel))
	for attempt := 0; ; attempt++ {
		fi, err := os.Lstat(abs)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		state := &fileState{st: st}
		switch {
		case fi.Mode().IsRegular():
			state.mode = filemode.Regular
			if fi.Mode()&0o111 != 0 {
				state.mode = filemode.Executable
			}
			state.data, err = os.ReadFile(abs)
		case fi.Mode()&os.ModeSymlink != 0:
			state.mode = filemode.Symlink
			var target string
			target, err = os.Readlink(abs)
			state.data = []byte(target)
		case fi.IsDir():
			return nil, nil // a folder now stands where the file was: the file is gone
		default:
			return nil, fmt.Errorf("read %s: not a regular file (%s)", rel, fi.Mode().Type())
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
		// A write between the stat and the read would leave an index entry
		// whose stat matches content it does not hold: read again.
		fi2, err := os.Lstat(abs)
		if err == nil && attempt < 3 && (fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime())) {
			continue
		}
		return state, nil
	}
}

// statMatches reports whether the index entry's stat still describes the
// file, and the entry is not racy (written in the same second as the index).
func statMatches(e indexEntryInfo, st *syscall.Stat_t, indexMtime int64) bool {
	if st == nil {
		return false
	}
	return e.Size == uint32(st.Size) && e.Mtime == st.Mtim.Sec && e.MtNs == uint32(st.Mtim.Nsec) &&
		e.Ino == uint32(st.Ino) && e.Mtime < indexMtime && e.Size != 0
}

// writeWorkFile writes a blob into the work tree (mode 0600 or 0700 for
// executables, folders 0700) and returns its stat for the index.
func (r *Repo) writeWorkFile(rel string, data []byte, mode filemode.FileMode) (*syscall.Stat_t, error) {
	if err := r.realParents(rel); err != nil {
		return nil, fmt.Errorf("write %s: %w", rel, err)
	}
	abs := filepath.Join(r.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		// A file where a folder must go: the tree replaced it.
		if err := replaceFileWithDir(r.Dir, filepath.Dir(abs)); err != nil {
			return nil, fmt.Errorf("write %s: %w", rel, err)
		}
	}
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
		if err := clearDir(r.Dir, abs); err != nil {
			return nil, fmt.Errorf("write %s: %w", rel, err)
		}
	}
	if mode == filemode.Symlink {
		_ = os.Remove(abs)
		if err := os.Symlink(string(data), abs); err != nil {
			return nil, fmt.Errorf("write %s: %w", rel, err)
		}
	} else {
		perm := os.FileMode(0o600)
		if mode == filemode.Executable {
			perm = 0o700
		}
		if err := atomicfile.Write(abs, data, perm, false); err != nil {
			return nil, fmt.Errorf("write %s: %w", rel, err)
		}
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", rel, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	return st, nil
}

func replaceFileWithDir(root, dir string) error {
	for d := dir; strings.HasPrefix(d, root) && d != root; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
			// The tree's deletion of this file came first and put it back:
			// it is the agent's, kept beside as a conflict copy.
			if err := moveAside(root, d); err != nil {
				return err
			}
			break
		}
	}
	return os.MkdirAll(dir, 0o700)
}

// clearDir makes way for a file where a folder stands: an empty folder is
// removed, one still holding files (the agent's) is moved aside.
func clearDir(root, abs string) error {
	if err := os.Remove(abs); err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return moveAside(root, abs)
}

// moveAside renames what stands at abs (a file, or a folder holding the
// agent's files) to a conflict-copy name beside it, so the tree can put
// something else there without destroying it; the copy is committed next.
func moveAside(root, abs string) error {
	rel, _ := filepath.Rel(root, abs)
	seed := blobHash([]byte(fmt.Sprintf("%s %d", rel, time.Now().UnixNano())))
	dst := filepath.Join(root, filepath.FromSlash(ConflictName(filepath.ToSlash(rel), seed)))
	if err := os.Rename(abs, dst); err != nil {
		return fmt.Errorf("move %s aside: %w", rel, err)
	}
	return nil
}

// blobHash is the id the content would have as a blob.
func blobHash(data []byte) plumbing.Hash { return hashObject(plumbing.BlobObject, data) }

// symlinkedParent returns the first folder on rel's path (below the work
// tree) that is a symbolic link, "" when none: a write through it would
// land outside the work tree (an agent's `ln -s .. esc`).
func (r *Repo) symlinkedParent(rel string) string {
	parts := strings.Split(rel, "/")
	p := r.Dir
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return "" // missing from here on: MkdirAll makes real folders
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return p
		}
		if !fi.IsDir() {
			return ""
		}
	}
	return ""
}

// realParents makes sure nothing written at rel goes through a symbolic
// link: a link standing where a folder of the tree goes is moved aside (it
// is committed next as the agent's), then the folder is made for real.
func (r *Repo) realParents(rel string) error {
	for i := 0; i < 64; i++ {
		link := r.symlinkedParent(rel)
		if link == "" {
			return nil
		}
		if err := moveAside(r.Dir, link); err != nil {
			return err
		}
		r.log.Warn("a symbolic link stood where the tree has a folder; moved aside", "link", link)
	}
	return fmt.Errorf("%s: too many symbolic links on the path", rel)
}

// isDir reports whether rel is a folder in the work tree (not following
// a symbolic link).
func (r *Repo) isDir(rel string) bool {
	fi, err := os.Lstat(filepath.Join(r.Dir, filepath.FromSlash(rel)))
	return err == nil && fi.IsDir()
}
