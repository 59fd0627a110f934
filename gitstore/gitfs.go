package gitstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
// TestWalls_FuzzOneAgentsGitDir), a link in the last component is not
// followed, and a FIFO, device or socket is refused, as OpenGitFile does.
type gitFS struct {
	billy.Filesystem
	root string
}

// NewGitFS is gitDir as go-git's storage should see it (see gitFS).
func NewGitFS(gitDir string) billy.Filesystem { return gitFS{osfs.New(gitDir), gitDir} }

func (f gitFS) Open(name string) (billy.File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

func (f gitFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_APPEND|os.O_TRUNC) != 0 {
		return f.Filesystem.OpenFile(name, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, perm)
	}
	path := filepath.Join(f.root, filepath.FromSlash(name))
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	switch {
	case err == syscall.ELOOP:
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: is a symbolic link", ErrNotRegular)}
	case err != nil:
		// A plain *os.PathError: go-git tells a missing object by
		// os.IsNotExist, which does not look through other wrappers.
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
	return &readFile{File: file, name: name}, nil
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
	infos, err := readDirNonBlocking(filepath.Join(f.root, path))
	if err != nil || filepath.Clean(path) != filepath.Join("objects", "pack") {
		return infos, err
	}
	idx := map[string]bool{}
	for _, fi := range infos {
		if base, ok := strings.CutSuffix(fi.Name(), ".idx"); ok {
			idx[base] = true
		}
	}
	out := infos[:0]
	for _, fi := range infos {
		if base, ok := strings.CutSuffix(fi.Name(), ".pack"); ok && !idx[base] {
			continue
		}
		out = append(out, fi)
	}
	return out, nil
}

// readDirNonBlocking is os.ReadDir's infos for a folder: a FIFO (or
// anything but a folder) where one is expected is an error, at once.
func readDirNonBlocking(dir string) ([]os.FileInfo, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	infos, err := d.Readdir(-1)
	if err != nil {
		return nil, err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name() < infos[j].Name() })
	return infos, nil
}
