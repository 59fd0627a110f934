package gitmem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/gitstore"
)

// ErrObjectsMissing: the repository's refs or index name objects its
// object store does not hold (objects/ put back from an older copy, a pack
// or loose-object folder removed). Confirmed by ConfirmDamage, never
// guessed from one failed read.
var ErrObjectsMissing = errors.New("objects missing from .git")

// MissingObject reports whether err is a failed read of an object: go-git's
// plumbing.ErrObjectNotFound, or its text where go-git's UnexpectedError
// (no Unwrap) carries it.
func MissingObject(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, plumbing.ErrObjectNotFound) || strings.Contains(err.Error(), plumbing.ErrObjectNotFound.Error())
}

// DamageError is a confirmed damage: objects that HEAD, the remote-tracking
// branch or the index name, missing from the object store twice in a row,
// with no repack running.
type DamageError struct {
	Count   int             // missing objects found
	Missing []plumbing.Hash // the first of them (at most maxMissingShown)
	// What names the first missing object ("HEAD's tree", "the index: a.md", ...).
	What string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%v: %d object(s), first %s (%s)", ErrObjectsMissing, e.Count, e.Missing[0], e.What)
}

func (e *DamageError) Unwrap() error { return ErrObjectsMissing }

// maxMissingShown bounds the objects a DamageError lists.
const maxMissingShown = 20

// maxCheckCommits bounds the history ConfirmDamage reads.
const maxCheckCommits = 200000

// confirmPause is the wait between ConfirmDamage's two looks.
const confirmPause = 200 * time.Millisecond

// ConfirmDamage looks, as a careful person would before rebuilding, at
// whether the object store really lacks what the repository names: HEAD's
// commit, every commit of its history and of the remote-tracking branch's,
// both tips' trees and every tree and blob they name (read whole), and the
// blobs the index names. It reads through a storage of its own, opened
// afresh (memfsd's own may hold a stale pack list), while neither memfsd's
// repack of this repository nor a `git gc` elsewhere runs (gc.pid; a
// running one is ErrGCRunning: nothing confirmed), and looks twice, a
// moment apart: only what is missing both times counts. It returns nil
// when everything is there (a miss was transient), a *DamageError when
// objects are missing, or an error when it cannot tell (a ref it cannot
// read: not a missing object).
func (r *Repo) ConfirmDamage(ctx context.Context) (*DamageError, error) {
	r.repackMu.Lock() // no repack of ours moves objects meanwhile
	defer r.repackMu.Unlock()
	release, err := gitstore.TakeGCPID(r.GitDir) // nor anyone's git gc
	if err != nil {
		return nil, fmt.Errorf("confirm damage: %w", err)
	}
	defer release()
	first, err := r.checkObjects(ctx)
	if err != nil || first == nil {
		return nil, err
	}
	if r.betweenLooks != nil {
		r.betweenLooks()
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(confirmPause):
	}
	return r.checkObjects(ctx)
}

// checkObjects is one look of ConfirmDamage.
func (r *Repo) checkObjects(ctx context.Context) (*DamageError, error) {
	st := filesystem.NewStorage(gitstore.NewGitFS(r.GitDir), cache.NewObjectLRU(8<<20))
	defer st.Close()
	var dmg *DamageError
	miss := func(h plumbing.Hash, what string) {
		if dmg == nil {
			dmg = &DamageError{What: what}
		}
		dmg.Count++
		if len(dmg.Missing) < maxMissingShown {
			dmg.Missing = append(dmg.Missing, h)
		}
	}
	head, err := r.Head()
	if err != nil {
		return nil, err
	}
	tracking, err := r.RemoteHead()
	if err != nil {
		return nil, err
	}
	// Every commit of both histories.
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{}
	for _, tip := range []plumbing.Hash{head, tracking} {
		if !tip.IsZero() {
			queue = append(queue, tip)
		}
	}
	tipTrees := map[plumbing.Hash]string{}
	for len(queue) > 0 && len(seen) < maxCheckCommits {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(st, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			miss(h, "a commit of the branch's or the remote-tracking branch's history")
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("confirm damage: read commit %s: %w", h, err)
		}
		switch h {
		case head:
			tipTrees[c.TreeHash] = "HEAD's tree"
		case tracking:
			tipTrees[c.TreeHash] = "the remote-tracking branch's tree"
		}
		queue = append(queue, c.ParentHashes...)
	}
	// Both tips' trees, whole.
	seenTrees := map[plumbing.Hash]bool{}
	var walk func(h plumbing.Hash, what string) error
	walk = func(h plumbing.Hash, what string) error {
		if seenTrees[h] {
			return nil
		}
		seenTrees[h] = true
		t, err := object.GetTree(st, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			miss(h, what)
			return nil
		}
		if err != nil {
			return fmt.Errorf("confirm damage: read tree %s: %w", h, err)
		}
		for _, e := range t.Entries {
			switch e.Mode {
			case filemode.Dir:
				if err := walk(e.Hash, what+": "+e.Name+"/"); err != nil {
					return err
				}
			case filemode.Submodule:
			default:
				if seenTrees[e.Hash] {
					continue
				}
				seenTrees[e.Hash] = true
				if err := readBlob(st, e.Hash); errors.Is(err, plumbing.ErrObjectNotFound) {
					miss(e.Hash, what+": "+e.Name)
				} else if err != nil {
					return fmt.Errorf("confirm damage: read blob %s: %w", e.Hash, err)
				}
			}
		}
		return nil
	}
	for h, what := range tipTrees {
		if err := walk(h, what); err != nil {
			return nil, err
		}
	}
	// The blobs the index names (an index memfsd cannot read is rebuilt
	// from HEAD by the commit path: not a missing object).
	if ix, err := r.ixc.read(r.GitDir); err == nil {
		for _, e := range ix.Entries {
			info := e.Info()
			if info.Mode == filemode.Submodule || info.Hash.IsZero() || seenTrees[info.Hash] {
				continue
			}
			if err := st.HasEncodedObject(info.Hash); errors.Is(err, plumbing.ErrObjectNotFound) {
				miss(info.Hash, "the index: "+e.Path)
			}
		}
	}
	return dmg, nil
}

// readBlob reads blob h whole.
func readBlob(st *filesystem.Storage, h plumbing.Hash) error {
	o, err := st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return err
	}
	rd, err := o.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	_, err = io.Copy(io.Discard, rd)
	return err
}

// ErrRepoInUse: another memfsd process (a one-shot `memfsd sync` beside
// the daemon) has the repository open; its .git is not swapped under it.
var ErrRepoInUse = errors.New("another memfsd process has the repository open")

// Rebuild is a fresh clone of the remote, made beside a damaged work tree,
// ready to take the place of its .git (Swap).
type Rebuild struct {
	tmp    string
	dir    string
	remote Remote
	opts   Options
}

// PrepareRebuild clones the remote into a temporary folder beside dir: the
// network step of a rebuild, with no lock taken and dir untouched.
func PrepareRebuild(ctx context.Context, dir string, remote Remote, opts Options) (*Rebuild, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".memfsd-clone-")
	if err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	built, err := Init(tmp, remote, opts)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	built.fresh = true
	_, err = built.Pull(ctx)
	built.Close()
	if err != nil && !(opts.CreateIfMissing && errors.Is(err, transport.ErrRepositoryNotFound)) {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("rebuild: clone: %w", err)
	}
	return &Rebuild{tmp: tmp, dir: dir, remote: remote, opts: opts}, nil
}

// Discard removes a prepared clone that will not be used.
func (b *Rebuild) Discard() { os.RemoveAll(b.tmp) }

// Swap puts the fresh clone in the damaged repository's place: old is
// closed, dir/.git is moved to aside (kept, never removed), the clone's
// .git moves in with the files dir lacks (the files dir has stay as they
// are and show as changes), and the new repository is opened. Local steps
// only: the caller holds its work lock. When the clone cannot move in,
// the old .git is put back. While another memfsd process has the
// repository open (its owner lock), nothing moves: ErrRepoInUse, and old
// is closed all the same.
func (b *Rebuild) Swap(old *Repo, aside string) (*Repo, error) {
	defer os.RemoveAll(b.tmp)
	if old != nil {
		old.Close()
	}
	gitDir := filepath.Join(b.dir, ".git")
	if f, err := os.OpenFile(filepath.Join(gitDir, "memfsd", "owner.lock"), os.O_RDWR, 0); err == nil {
		defer f.Close() // moves aside with the .git; released once it is there
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			return nil, fmt.Errorf("rebuild: %w", ErrRepoInUse)
		}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, gitDir, unix.AT_FDCWD, aside, unix.RENAME_NOREPLACE); err != nil {
		return nil, fmt.Errorf("rebuild: move .git aside to %s: %w", aside, err)
	}
	if err := moveClone(b.tmp, b.dir); err != nil {
		if _, serr := os.Lstat(gitDir); os.IsNotExist(serr) {
			_ = unix.Renameat2(unix.AT_FDCWD, aside, unix.AT_FDCWD, gitDir, unix.RENAME_NOREPLACE)
		}
		return nil, fmt.Errorf("rebuild: move the clone into place: %w", err)
	}
	r, err := Open(b.dir, b.remote, b.opts)
	if err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	return r, nil
}
