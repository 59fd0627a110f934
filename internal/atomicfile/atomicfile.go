// Package atomicfile is the one way memfsd writes a whole file of its own
// inside a .git (split index, pack index): a temporary file beside the
// target, then a rename. A crash leaves the old file or the new one, never
// half of either, and at worst a temporary file cleared at the next start.
// (Work files go through worktree.Dir, whose temporary files live in
// .git/memfsd/tmp.)
package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
)

// Prefix starts every temporary file name atomicfile makes (in a .git).
const Prefix = ".memfsd-tmp-"

// IsTemp reports whether a file name (base name) is one of memfsd's
// temporary files.
func IsTemp(name string) bool { return strings.HasPrefix(filepath.Base(name), Prefix) }

// CreateTemp writes data to a new temporary file in dir with mode perm
// (fsynced when sync) and returns its name; the caller renames it.
func CreateTemp(dir string, data []byte, perm os.FileMode, sync bool) (string, error) {
	f, err := os.CreateTemp(dir, Prefix)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// Write replaces abs with data in one step (its folder must exist).
func Write(abs string, data []byte, perm os.FileMode, sync bool) error {
	tmp, err := CreateTemp(filepath.Dir(abs), data, perm, sync)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, abs); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
