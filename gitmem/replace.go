package gitmem

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/worktree"
)

// leaseWait is how long a replace waits for another process to close a
// file before it falls back to the rename-exchange (see replaceWorkFile).
// One section under r.mu spends at most that much waiting in all: past it,
// each further file gets leaseWaitSpent, so a pull over many files held
// open cannot keep local writes waiting for long.
var leaseWait = 2 * time.Second

const leaseWaitSpent = 20 * time.Millisecond

// leaseWaitLeft is how long the next lease may wait in this section.
func (r *Repo) leaseWaitLeft() time.Duration {
	if left := leaseWait - r.leaseWaited; left > leaseWaitSpent {
		return left
	}
	return leaseWaitSpent
}

// lease takes the write lease on rel, counting the time it waited.
func (r *Repo) lease(rel string) (*worktree.Leased, error) {
	start := time.Now()
	l, err := r.wt.Lease(rel, r.leaseWaitLeft())
	r.leaseWaited += time.Since(start)
	return l, err
}

// noLease is set once the memory's filesystem refuses write leases; from
// then on files are replaced by rename-exchange.
var noLease atomic.Bool

var leaseProbe sync.Once

// probeLeases finds out once per process whether the memory's filesystem
// gives write leases, and says so in the log when it does not.
func (r *Repo) probeLeases() {
	leaseProbe.Do(func() {
		if err := worktree.ProbeLeases(r.wt, ".git/memfsd"); err != nil {
			r.noLeases(err)
		}
	})
}

// noLeases turns leases off for the process and says so, once.
func (r *Repo) noLeases(err error) {
	if !noLease.Swap(true) {
		r.log.Warn("no file leases on the memory's filesystem: a pull that replaces a file the agent is writing through an open descriptor can lose that write (docs/errors.md, What a replace guarantees)", "err", err)
	}
}

// decideFunc looks at what stands at a path (absent, or the agent's bytes,
// stable while it decides) and returns what to write there, or false to
// leave it as it is.
type decideFunc func(cur displaced) (data []byte, mode filemode.FileMode, write bool)

// replaceWorkFile replaces the file at rel, as decide says, without losing
// a write the agent makes at any moment, and returns what stood there and
// whether it was replaced (then st is the new file's stat, nil when the
// agent's own file stands at rel again).
//
// Under a write lease (see package worktree) no other process has the file
// open, and one that opens it waits: what is read is exactly what stands
// there, and the new version is written into the same inode, so a writer
// that opened before the lease finished before it, and one that opens
// after writes onto the new version at the name, never onto a file that
// has left the folder. Without leases (another filesystem, a file kept
// open past leaseWait, a symbolic link) the file is replaced by
// rename-exchange, which returns what it displaced for the caller to check
// but cannot see a write made afterwards through a descriptor opened
// before (docs/errors.md, "What a replace guarantees").
func (r *Repo) replaceWorkFile(rel string, decide decideFunc) (cur displaced, replaced bool, st *syscall.Stat_t, err error) {
	if err := r.realParents(rel); err != nil {
		return displaced{}, false, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	for attempt := 0; !noLease.Load(); attempt++ {
		l, err := r.lease(rel)
		switch {
		case err == nil:
			cur, replaced, st, err := r.replaceLeased(l, rel, decide)
			if rerr := l.Release(); err == nil && rerr != nil {
				err = fmt.Errorf("write %s: release lease: %w", rel, rerr)
			}
			return cur, replaced, st, err
		case errors.Is(err, fs.ErrNotExist):
			// Nothing there: create it, unless the agent does first.
			data, mode, ok := decide(displaced{})
			if !ok {
				return displaced{}, false, nil, nil
			}
			st, created, err := r.createWorkFile(rel, data, mode)
			if err != nil || created || attempt >= 10 {
				if !created && err == nil {
					err = fmt.Errorf("write %s: the file kept appearing and vanishing", rel)
				}
				return displaced{}, created, st, err
			}
			continue // the agent created it meanwhile: lease that one
		case errors.Is(err, worktree.ErrNoLease):
			r.noLeases(err)
		case errors.Is(err, worktree.ErrBusy):
			r.log.Warn("a file stayed open in another process; replacing it by rename-exchange", "path", rel, "waited", r.leaseWaited.String())
		case errors.Is(err, worktree.ErrNotOwner):
			r.log.Warn("a file belongs to another user and cannot be leased; replacing it by rename-exchange", "path", rel)
		case errors.Is(err, worktree.ErrNotFile), errors.Is(err, unix.EISDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EXDEV):
			// A symbolic link, a folder or a file where a folder goes: the
			// exchange below handles (and never follows) each.
		default:
			return displaced{}, false, nil, fmt.Errorf("write %s: %w", rel, err)
		}
		break
	}
	before, err := r.readDisplacedAt(rel)
	if err != nil {
		before = displaced{} // a device or such: the exchange fails on it
	}
	data, mode, ok := decide(before)
	if !ok {
		return before, false, nil, nil
	}
	got, st, err := r.renameByExchange(rel, data, mode)
	return got, err == nil, st, err
}

// replaceLeased is replaceWorkFile's step under the lease l.
func (r *Repo) replaceLeased(l *worktree.Leased, rel string, decide decideFunc) (displaced, bool, *syscall.Stat_t, error) {
	data, err := l.Read()
	if err != nil {
		return displaced{}, false, nil, fmt.Errorf("read %s: %w", rel, err)
	}
	cur := displaced{existed: true, data: data, mode: filemode.Regular}
	if l.Executable() {
		cur.mode = filemode.Executable
	}
	want, mode, ok := decide(cur)
	if !ok {
		return cur, false, nil, nil
	}
	if mode == filemode.Symlink {
		// A file becomes a link: nothing can be written through a link,
		// so the exchange is as safe; the lease is let go first.
		if err := l.Release(); err != nil {
			return cur, false, nil, err
		}
		got, st, err := r.renameByExchange(rel, want, mode)
		return got, err == nil, st, err
	}
	if err := r.journal.record(rel, cur.data, want); err != nil {
		return cur, false, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	st, err := l.Write(want, mode == filemode.Executable)
	if err != nil {
		return cur, false, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	r.journal.written()
	if !r.sameFile(rel, st) {
		// The agent renamed its own file over the name meanwhile: ours went
		// to the file it replaced, and the agent's stands (committed next).
		return cur, true, nil, nil
	}
	return cur, true, st, nil
}

// createWorkFile puts data at rel only if nothing stands there, and says
// whether it did.
func (r *Repo) createWorkFile(rel string, data []byte, mode filemode.FileMode) (*syscall.Stat_t, bool, error) {
	st, created, err := r.wt.Create(rel, data, wtMode(mode))
	if errors.Is(err, unix.ENOTDIR) {
		st, err := r.writeWorkFile(rel, data, mode) // a file where a folder must go
		return st, err == nil, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("write %s: %w", rel, err)
	}
	return st, created, nil
}

// removeWorkFile removes rel when decide (given what stands there, stable
// while it decides) says so, and returns what stood there and whether it
// was removed. Under a lease the file is renamed aside first; a writer
// that had already looked the name up and waits on the lease would write
// into the removed file, so memfsd then waits for it to close the file and
// puts what it wrote back at the name.
func (r *Repo) removeWorkFile(rel string, decide func(cur displaced) bool) (displaced, bool, error) {
	if r.symlinkedParent(rel) != "" {
		return displaced{}, false, nil // not in the work tree: nothing of ours to take
	}
	if !noLease.Load() {
		l, err := r.lease(rel)
		switch {
		case err == nil:
			defer l.Release()
			return r.removeLeased(l, rel, decide)
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR), errors.Is(err, worktree.ErrNotFile) && r.isDir(rel):
			return displaced{}, false, nil
		case errors.Is(err, worktree.ErrNoLease):
			r.noLeases(err)
		}
	}
	before, err := r.readDisplacedAt(rel)
	if err != nil || !before.existed || !decide(before) {
		return before, false, nil
	}
	got, err := r.takeByRename(rel)
	return got, err == nil && got.existed, err
}

func (r *Repo) isDir(rel string) bool {
	st, err := r.wt.Lstat(rel)
	return err == nil && isDirStat(st)
}

// removeLeased is removeWorkFile's step under the lease l.
func (r *Repo) removeLeased(l *worktree.Leased, rel string, decide func(cur displaced) bool) (displaced, bool, error) {
	data, err := l.Read()
	if err != nil {
		return displaced{}, false, fmt.Errorf("read %s: %w", rel, err)
	}
	cur := displaced{existed: true, data: data, mode: filemode.Regular}
	if l.Executable() {
		cur.mode = filemode.Executable
	}
	if !decide(cur) {
		return cur, false, nil
	}
	aside := r.asideName(rel)
	if err := r.wt.Rename(rel, aside, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return cur, false, nil
		}
		return cur, false, fmt.Errorf("delete %s: %w", rel, err)
	}
	if !r.sameFile(aside, l.Stat()) {
		// The agent renamed a new file over the name between the lease and
		// the rename: that one is theirs, and goes back.
		if err := r.wt.Rename(aside, rel, unix.RENAME_NOREPLACE); err != nil {
			if err := r.keepAside(rel, aside); err != nil {
				return cur, false, err
			}
		}
		return cur, false, nil
	}
	defer r.wt.Remove(aside)
	if !l.BreakPending() {
		r.removeEmptyParents(rel)
		return cur, true, nil
	}
	// A writer is waiting to open the file it looked up before the rename:
	// let it, wait for it to close, and keep what it wrote.
	if err := l.Reacquire(r.leaseWaitLeft()); err != nil {
		r.log.Warn("a writer kept a removed file open; what it writes after now is not kept", "path", rel, "err", err)
	}
	after, err := l.Read()
	if err != nil || bytes.Equal(after, cur.data) {
		r.removeEmptyParents(rel)
		return cur, true, nil
	}
	// The agent wrote to it after the remote removed it: it stays.
	if _, created, err := r.wt.Create(rel, after, wtMode(cur.mode)); err != nil || !created {
		copyRel, kerr := r.keepCopy(rel, after, cur.mode)
		if kerr != nil {
			return cur, false, kerr
		}
		r.log.Warn("kept a file written while the sync removed it beside its path", "path", rel, "copy", copyRel)
		return cur, false, nil
	}
	r.log.Info("kept a file written while the sync removed it; it will be committed next", "path", rel)
	return cur, false, nil
}

// keepAside moves the file at aside to a conflict copy of rel.
func (r *Repo) keepAside(rel, aside string) error {
	d, err := r.readDisplacedAt(aside)
	if err != nil {
		return fmt.Errorf("keep %s: %w", rel, err)
	}
	copyRel := ConflictName(rel, blobHash(d.data))
	if err := r.wt.Rename(aside, copyRel, 0); err != nil {
		return fmt.Errorf("keep %s: %w", copyRel, err)
	}
	r.log.Warn("kept a file beside its path as a conflict copy", "path", rel, "copy", copyRel)
	return nil
}
