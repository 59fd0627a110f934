package gitmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/internal/atomicfile"
)

// displaced is what stood at a work-tree path at the instant memfsd
// replaced or removed it.
type displaced struct {
	existed bool
	data    []byte
	mode    filemode.FileMode
}

// is reports whether the displaced file was exactly the blob h with mode
// (absent matches a zero hash).
func (d displaced) is(h plumbing.Hash, mode filemode.FileMode) bool {
	if !d.existed {
		return h.IsZero()
	}
	return !h.IsZero() && blobHash(d.data) == h && d.mode == mode
}

// noExchange is set once the filesystem refuses RENAME_EXCHANGE; from then
// on replacing a file reads it first and renames over it (a small window in
// which an agent's write can be displaced unseen).
var noExchange atomic.Bool

// exchangeWorkFile puts data at rel and returns exactly what it displaced:
// under a lease in place (replaceWorkFile), else by renameByExchange.
func (r *Repo) exchangeWorkFile(rel string, data []byte, mode filemode.FileMode) (displaced, *syscall.Stat_t, error) {
	got, _, st, err := r.replaceWorkFile(rel, func(displaced) ([]byte, filemode.FileMode, bool) { return data, mode, true })
	return got, st, err
}

// renameByExchange puts data at rel in one step and returns exactly what it
// displaced: the new version is written to a temporary file beside it and
// swapped in with renameat2(RENAME_EXCHANGE), so a write the agent makes at
// any moment is either displaced (and returned, for the caller to check and
// put back) or lands on the new version afterwards — never lost unseen.
func (r *Repo) renameByExchange(rel string, data []byte, mode filemode.FileMode) (displaced, *syscall.Stat_t, error) {
	if err := r.realParents(rel); err != nil {
		return displaced{}, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	abs := filepath.Join(r.Dir, filepath.FromSlash(rel))
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
		// A folder stands where the file goes (the tree replaced it): an
		// empty one goes, one still holding the agent's files moves aside.
		if err := clearDir(r.Dir, abs); err != nil {
			return displaced{}, nil, fmt.Errorf("write %s: %w", rel, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		st, err := r.writeWorkFile(rel, data, mode) // a file where a folder must go
		return displaced{}, st, err
	}
	tmp, err := writeTemp(filepath.Dir(abs), data, mode)
	if err != nil {
		return displaced{}, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	defer os.Remove(tmp) // after an exchange it holds the displaced file
	var old displaced
	for attempt := 0; ; attempt++ {
		if noExchange.Load() {
			if old, err = readDisplaced(abs); err != nil {
				return old, nil, fmt.Errorf("write %s: %w", rel, err)
			}
			if err := os.Rename(tmp, abs); err != nil {
				return old, nil, fmt.Errorf("write %s: %w", rel, err)
			}
			break
		}
		err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, abs, unix.RENAME_EXCHANGE)
		if err == nil {
			if old, err = readDisplaced(tmp); err != nil {
				return old, nil, fmt.Errorf("write %s: read displaced: %w", rel, err)
			}
			break
		}
		if errors.Is(err, unix.ENOENT) {
			// Nothing there: move in only if that is still so.
			err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, abs, unix.RENAME_NOREPLACE)
			if err == nil {
				break
			}
			if errors.Is(err, unix.EEXIST) && attempt < 10 {
				continue // the agent created it meanwhile: exchange instead
			}
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			if !noExchange.Swap(true) {
				r.log.Warn("the filesystem has no rename-exchange: replacing work-tree files by read-then-rename", "err", err)
			}
			continue
		}
		return old, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return old, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	return old, st, nil
}

// takeWorkFile removes rel and returns what it removed (see
// removeWorkFile); folders it leaves empty go too.
func (r *Repo) takeWorkFile(rel string) (displaced, error) {
	got, _, err := r.removeWorkFile(rel, func(displaced) bool { return true })
	return got, err
}

// takeByRename removes rel in one step (renamed aside, then read) and
// returns what it removed; folders it leaves empty go too.
func (r *Repo) takeByRename(rel string) (displaced, error) {
	if r.symlinkedParent(rel) != "" {
		return displaced{}, nil // not in the work tree: nothing of ours to take
	}
	abs := filepath.Join(r.Dir, filepath.FromSlash(rel))
	if fi, err := os.Lstat(abs); err != nil || fi.IsDir() {
		return displaced{}, nil
	}
	tmp := filepath.Join(filepath.Dir(abs), fmt.Sprintf("%stake-%d-%d", atomicfile.Prefix, os.Getpid(), tmpSeq.Add(1)))
	if err := os.Rename(abs, tmp); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return displaced{}, nil
		}
		return displaced{}, fmt.Errorf("delete %s: %w", rel, err)
	}
	old, err := readDisplaced(tmp)
	if err != nil {
		// Put it back rather than lose it.
		_ = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, abs, unix.RENAME_NOREPLACE)
		return old, fmt.Errorf("delete %s: %w", rel, err)
	}
	os.Remove(tmp)
	for d := filepath.Dir(abs); d != r.Dir && len(d) > len(r.Dir); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return old, nil
}

// putBack restores an agent's bytes d that a replace or delete displaced
// although they were not the version expected; ours is what that replace
// put in their place. Each exchange must displace exactly what was put
// there before; anything else is a write the agent made meanwhile, which is
// newer and goes back in turn. Should the agent keep winning for ten
// rounds, the bytes last displaced are kept beside the file as a conflict
// copy: nothing is dropped.
func (r *Repo) putBack(rel string, d displaced, ours plumbing.Hash, oursMode filemode.FileMode) error {
	expect, expectMode := ours, oursMode
	for attempt := 0; attempt < 10; attempt++ {
		if !d.existed {
			return nil
		}
		got, _, err := r.renameByExchange(rel, d.data, d.mode)
		if err != nil {
			return err
		}
		if got.is(expect, expectMode) || !got.existed {
			return nil // what went out is what we had put there
		}
		// A newer write landed on what we had put there: it goes back in,
		// displacing the older bytes we just placed.
		expect, expectMode = blobHash(d.data), d.mode
		d = got
	}
	if !d.existed {
		return nil
	}
	copyRel := ConflictName(rel, blobHash(d.data))
	abs := filepath.Join(r.Dir, filepath.FromSlash(copyRel))
	tmp, err := writeTemp(filepath.Dir(abs), d.data, d.mode)
	if err != nil {
		return fmt.Errorf("keep %s: %w", copyRel, err)
	}
	defer os.Remove(tmp)
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, abs, unix.RENAME_NOREPLACE); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("keep %s: %w", copyRel, err)
	}
	r.log.Warn("a file kept changing while memfsd replaced it; the last displaced version is kept beside it", "path", rel, "copy", copyRel)
	return nil
}

var tmpSeq atomic.Int64

// writeTemp writes data (a file, or a symlink's target) to a new temporary
// name in dir, named so that scans and the watcher skip it.
func writeTemp(dir string, data []byte, mode filemode.FileMode) (string, error) {
	if mode == filemode.Symlink {
		name := filepath.Join(dir, fmt.Sprintf("%slink-%d-%d", atomicfile.Prefix, os.Getpid(), tmpSeq.Add(1)))
		return name, os.Symlink(string(data), name)
	}
	perm := os.FileMode(0o600)
	if mode == filemode.Executable {
		perm = 0o700
	}
	return atomicfile.CreateTemp(dir, data, perm, false)
}

// readDisplaced reads the file (or symlink) at p; absent is not an error.
func readDisplaced(p string) (displaced, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return displaced{}, nil
	}
	if err != nil {
		return displaced{}, err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(p)
		return displaced{existed: true, data: []byte(t), mode: filemode.Symlink}, err
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(p)
		mode := filemode.Regular
		if fi.Mode()&0o111 != 0 {
			mode = filemode.Executable
		}
		if data == nil {
			data = []byte{}
		}
		return displaced{existed: true, data: data, mode: mode}, err
	}
	return displaced{}, fmt.Errorf("%s is not a regular file (%s)", p, fi.Mode().Type())
}

// RestoreMissing writes HEAD's version of each path that is missing from
// the work tree (a file that is there, whoever wrote it, is left alone) and
// returns the paths it wrote back.
func (r *Repo) RestoreMissing(paths []string) ([]string, error) {
	r.mu.Lock()
	defer r.unlock()
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return nil, err
	}
	tree, err := r.objs.commitTree(head)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		p, err := cleanPath(p)
		if err != nil {
			return out, err
		}
		e, ok, err := r.objs.entryAt(tree, p)
		if err != nil {
			return out, err
		}
		abs := filepath.Join(r.Dir, filepath.FromSlash(p))
		if _, err := os.Lstat(abs); !ok || err == nil {
			continue
		}
		data, err := r.objs.blob(e.Hash)
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
