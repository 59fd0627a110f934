package gitmem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/internal/fsperm"
)

// Clone makes dir a clone of the remote, or opens it when it already is
// one. It never destroys what it did not create: an existing .git that
// cannot be opened is an error (never re-initialised), and a first clone is
// built in a temporary folder beside dir and moved into place only once
// complete, so a failed clone leaves nothing half-made. Files already in
// dir (written before the first clone) are kept as they are and show as
// changes. An empty remote leaves an unborn branch: the caller writes the
// first commit and pushes it.
func Clone(ctx context.Context, dir string, remote Remote, opts Options) (*Repo, error) {
	r, err := Open(dir, remote, opts)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, ErrNotRepository) {
		return nil, fmt.Errorf("clone: %w", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return nil, fmt.Errorf("clone: %s/.git exists but is not a repository (no HEAD): move it away to clone afresh", dir)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, fsperm.Path()); err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".memfsd-clone-")
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	defer os.RemoveAll(tmp)                              // ours alone; empty once moved into place
	if err := os.Chmod(tmp, fsperm.Root()); err != nil { // MkdirTemp's 0700, or the group's (set-group-ID)
		return nil, fmt.Errorf("clone: %w", err)
	}
	built, err := Init(tmp, remote, opts)
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	built.fresh = true
	_, err = built.Pull(ctx)
	built.Close()
	if err != nil && !(opts.CreateIfMissing && errors.Is(err, transport.ErrRepositoryNotFound)) {
		return nil, fmt.Errorf("clone: %w", err)
	}
	// (With CreateIfMissing, a host without the repository yet leaves an
	// unborn branch: the caller's first push creates it.)
	if err := moveClone(tmp, dir); err != nil {
		return nil, fmt.Errorf("clone: move into place: %w", err)
	}
	r, err = Open(dir, remote, opts)
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	return r, nil
}

// moveClone moves a finished clone from tmp into dir: the whole folder when
// dir does not exist; else each work-tree file dir lacks (a file dir already
// has is kept: it is the agent's and shows as a change), and .git last, so a
// crash midway leaves dir without a repository and the next run clones
// again over the files already moved.
func moveClone(tmp, dir string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE); err == nil {
		return os.Mkdir(tmp, 0o700) // for the deferred RemoveAll
	} else if !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.ENOTEMPTY) {
		return err
	}
	err := filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == tmp {
			return err
		}
		rel, _ := filepath.Rel(tmp, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, fsperm.Dir())
		}
		if err := unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return unix.Renameat2(unix.AT_FDCWD, filepath.Join(tmp, ".git"), unix.AT_FDCWD, filepath.Join(dir, ".git"), unix.RENAME_NOREPLACE)
}
