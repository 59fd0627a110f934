package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
)

// gitFS is the .git folder as go-git's storage sees it, with one change:
// objects/pack lists only packs that have their index. git writes a pack
// before its index and removes the index first, so a pack without one is
// a pack being written or removed, or left so by a crash; git skips it, but
// go-git lists packs by their .pack files and then fails every lookup
// ("packfile not found") until it is gone.
//
// The agent's shell can write anything there, and go-git opens objects,
// packs and their indexes through this file system: no open blocks (a
// FIFO at a pack's .idx hung the agent's sync for good, found by
// TestWalls_FuzzOneAgentsGitDir), and a FIFO, device or socket is
// refused, as OpenGitFile does.
//
// Nothing there is reached through a symbolic link, on any component
// (beneath.go): a fan-out folder objects/ab swapped for a link to another
// agent's objects is missing, not followed, and so is a linked pack (left
// out of the listing); objects/info/alternates is never read. A loose
// object is inflated against its header's size and the cap before go-git
// reads it (objcap.go). What is refused so is noted in refused.
type gitFS struct {
	billy.Filesystem
	root    string
	refused *Refusals
}

// NewGitFS is gitDir as go-git's storage should see it (see gitFS).
func NewGitFS(gitDir string) billy.Filesystem { return gitFS{osfs.New(gitDir), gitDir, nil} }

// NewGitFSNoting is NewGitFS that notes in refused what it would not read.
func NewGitFSNoting(gitDir string, refused *Refusals) billy.Filesystem {
	return gitFS{osfs.New(gitDir), gitDir, refused}
}

// alternatesRel is git's list of other object stores to borrow from: an
// agent's would name another agent's objects. memfsd's clones never have
// one, so it is never read.
const alternatesRel = "objects/info/alternates"

func (f gitFS) Open(name string) (billy.File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

func (f gitFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_TRUNC) != 0 {
		return f.Filesystem.OpenFile(name, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, perm)
	}
	rel := cleanRel(name)
	path := filepath.Join(f.root, filepath.FromSlash(rel))
	// A missing file is a plain *os.PathError of ENOENT: go-git tells a
	// missing object by os.IsNotExist, which looks through no other wrapper.
	missing := &os.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
	if rel == alternatesRel {
		if _, err := statBeneath(f.root, rel); err == nil {
			f.refused.Note(rel, "alternates are never followed; objects found only there are missing")
		}
		return nil, missing
	}
	fd, err := openBeneath(f.root, rel)
	switch {
	case linkRefused(err):
		f.refused.Note(rel, "a symbolic link on the path, not followed; what lies behind it is missing")
		return nil, missing
	case errors.Is(err, syscall.ENOTDIR):
		return nil, missing
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	file := os.NewFile(uintptr(fd), path)
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		file.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(fi.Mode()))}
	}
	if looseRel.MatchString(rel) {
		sums, err := checkLoose(file, rel)
		if err != nil {
			file.Close()
			var big *ObjectTooLargeError
			if errors.As(err, &big) {
				f.refused.Note(rel, big.Error())
			}
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		// Only the bytes checked are read from it (the agent may rewrite
		// it in place after the check).
		return &checkedFile{readFile: &readFile{File: file, name: name}, id: looseID(rel), sums: sums}, nil
	}
	return &readFile{File: file, name: name}, nil
}

// Stat and Lstat look beneath .git through no link: a link is reported as
// itself by Lstat, and as missing by Stat (it is never followed).
func (f gitFS) Stat(name string) (os.FileInfo, error) {
	fi, err := f.Lstat(name)
	if err == nil && fi.Mode()&os.ModeSymlink != 0 {
		f.refused.Note(cleanRel(name), "a symbolic link, not followed")
		return nil, &os.PathError{Op: "stat", Path: filepath.Join(f.root, name), Err: syscall.ENOENT}
	}
	return fi, err
}

func (f gitFS) Lstat(name string) (os.FileInfo, error) {
	rel := cleanRel(name)
	path := filepath.Join(f.root, filepath.FromSlash(rel))
	st, err := statBeneath(f.root, rel)
	switch {
	case linkRefused(err):
		f.refused.Note(rel, "a symbolic link on the path, not followed; what lies behind it is missing")
		return nil, &os.PathError{Op: "lstat", Path: path, Err: syscall.ENOENT}
	case errors.Is(err, syscall.ENOTDIR):
		return nil, &os.PathError{Op: "lstat", Path: path, Err: syscall.ENOENT}
	case err != nil:
		return nil, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return statInfo(filepath.Base(path), st), nil
}

// readFile is a file of .git opened for reading, as billy.File.
type readFile struct {
	*os.File
	name string
}

func (f *readFile) Name() string { return f.name }
func (f *readFile) Lock() error  { return flock(f.File, syscall.LOCK_EX) }
func (f *readFile) Unlock() error {
	return flock(f.File, syscall.LOCK_UN)
}

func flock(f *os.File, how int) error {
	for {
		if err := syscall.Flock(int(f.Fd()), how); err != syscall.EINTR {
			return err
		}
	}
}

func (f gitFS) ReadDir(path string) ([]os.FileInfo, error) {
	rel := cleanRel(path)
	infos, err := ReadDirBeneath(f.root, rel)
	if linkRefused(err) {
		f.refused.Note(rel, "a symbolic link on the path, not followed; what lies behind it is missing")
		return nil, &os.PathError{Op: "open", Path: filepath.Join(f.root, rel), Err: syscall.ENOENT}
	}
	if err != nil {
		return nil, err
	}
	// A link in the listing (a fan-out folder or a pack the agent swapped
	// for one) is left out: it is never followed.
	out := infos[:0]
	for _, fi := range infos {
		if fi.Mode()&os.ModeSymlink != 0 {
			f.refused.Note(rel+"/"+fi.Name(), "a symbolic link, not followed; what lies behind it is missing")
			continue
		}
		out = append(out, fi)
	}
	infos = out
	if rel != "objects/pack" {
		return infos, nil
	}
	idx := map[string]bool{}
	for _, fi := range infos {
		if base, ok := strings.CutSuffix(fi.Name(), ".idx"); ok {
			idx[base] = true
		}
	}
	out = infos[:0]
	for _, fi := range infos {
		if base, ok := strings.CutSuffix(fi.Name(), ".pack"); ok && !idx[base] {
			continue
		}
		out = append(out, fi)
	}
	return out, nil
}
