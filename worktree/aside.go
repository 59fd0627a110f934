package worktree

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Aside is a work file moved into d's temporary folder (TempDir, or the
// folder SetTempDir gave): out of the tree, on its filesystem, under a name
// no tree path can be. Every step goes by descriptor.
type Aside struct {
	d    *Dir
	name string // in the temporary folder
}

// MoveAside renames rel into the temporary folder under a new name of kind
// (as TempName's).
func (d *Dir) MoveAside(rel, kind string) (*Aside, error) {
	pfd, name, err := d.openParent(rel, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	tfd, err := d.openTempDir()
	if err != nil {
		return nil, err
	}
	defer unix.Close(tfd)
	a := &Aside{d: d, name: TempName(kind)}
	if err := unix.Renameat2(pfd, name, tfd, a.name, unix.RENAME_NOREPLACE); err != nil {
		return nil, &os.LinkError{Op: "rename", Old: rel, New: a.name, Err: err}
	}
	return a, nil
}

// Lstat stats the file aside.
func (a *Aside) Lstat() (*syscall.Stat_t, error) {
	tfd, err := a.d.openTempDir()
	if err != nil {
		return nil, err
	}
	defer unix.Close(tfd)
	var st unix.Stat_t
	if err := unix.Fstatat(tfd, a.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: a.name, Err: err}
	}
	return toSyscall(&st), nil
}

// Remove removes the file aside.
func (a *Aside) Remove() error {
	tfd, err := a.d.openTempDir()
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	if err := unix.Unlinkat(tfd, a.name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: a.name, Err: err}
	}
	return nil
}

// PutBack renames the file aside to rel (flags as renameat2's, e.g.
// unix.RENAME_NOREPLACE).
func (a *Aside) PutBack(rel string, flags uint) error {
	tfd, err := a.d.openTempDir()
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	pfd, name, err := a.d.openParent(rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Renameat2(tfd, a.name, pfd, name, flags); err != nil {
		return &os.LinkError{Op: "rename", Old: a.name, New: rel, Err: err}
	}
	return nil
}
