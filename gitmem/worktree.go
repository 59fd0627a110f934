package gitmem

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/worktree"
)

// ErrBadPath is returned for a path that is not a memory path (see
// worktree.Check): it is worktree.ErrUntrackable, so either matches.
var ErrBadPath = worktree.ErrUntrackable

// fileState is a work-tree file read for a commit: its blob content, mode
// and the stat taken before reading (so a change after the read shows).
type fileState struct {
	data []byte
	mode filemode.FileMode
	st   *syscall.Stat_t
	// tooLarge is the size of a file over the cap (Options.MaxFileBytes),
	// left unread (data is nil); zero for a file read.
	tooLarge int64
}

// statMatches reports whether the index entry's stat still describes the
// file, and the entry is not racy (written in the same second as the index).
func statMatches(e index.EntryInfo, st *syscall.Stat_t, indexMtime int64) bool {
	if st == nil {
		return false
	}
	return e.Size == uint32(st.Size) && e.Mtime == st.Mtim.Sec && e.MtNs == uint32(st.Mtim.Nsec) &&
		e.Ino == uint32(st.Ino) && e.Mtime < indexMtime && e.Size != 0
}

// blobHash is the id the content would have as a blob.
func blobHash(data []byte) plumbing.Hash { return codec.Hash(plumbing.BlobObject, data) }

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
	case filemode.Regular:
		return worktree.Regular
	}
	return worktree.Other
}

func isDirStat(st *syscall.Stat_t) bool {
	return st != nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

func (r *Repo) isDir(rel string) bool {
	st, err := r.wt.Lstat(rel)
	return err == nil && isDirStat(st)
}

// readWorkFile reads rel from the work tree; nil when it does not exist,
// is a folder, or lies behind a symbolic link (not a file of the tree).
// A file over the cap is not read: its state says so (tooLarge).
func (r *Repo) readWorkFile(rel string) (*fileState, error) {
	f, err := r.wt.ReadLimit(rel, r.maxFileBytes())
	var tl *worktree.TooLargeError
	if errors.As(err, &tl) {
		mode := filemode.Regular
		if tl.Stat != nil && tl.Stat.Mode&0o111 != 0 {
			mode = filemode.Executable
		}
		return &fileState{mode: mode, st: tl.Stat, tooLarge: tl.Size}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if f == nil {
		return nil, nil
	}
	data := f.Data
	if data == nil {
		data = []byte{}
	}
	return &fileState{data: data, mode: gitMode(f.Mode), st: f.Stat}, nil
}

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
		e, ok, err := r.objs.EntryAt(tree, p)
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
