package worktree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/gitfmt/merge3"
)

// leaseWait is how long a replace waits for another process to close a
// file before it falls back to the rename-exchange (see replaceWorkFile).
// One section (up to Done) spends at most that much waiting in all: past it,
// each further file gets leaseWaitSpent, so a pull over many files held
// open cannot keep local writes waiting for long.
var leaseWait = 2 * time.Second

const leaseWaitSpent = 20 * time.Millisecond

// leaseWaitLeft is how long the next lease may wait in this section.
func (wf *Files) leaseWaitLeft() time.Duration {
	if left := leaseWait - wf.leaseWaited; left > leaseWaitSpent {
		return left
	}
	return leaseWaitSpent
}

// lease takes the write lease on rel, counting the time it waited.
func (wf *Files) lease(rel string) (*Leased, error) {
	start := time.Now()
	l, err := wf.dir.Lease(rel, wf.leaseWaitLeft())
	wf.leaseWaited += time.Since(start)
	return l, err
}

// noLease is set once the memory's filesystem refuses write leases; from
// then on files are replaced by rename-exchange.
var noLease atomic.Bool

var leaseProbe sync.Once

// CheckLeases finds out once per process whether the memory's filesystem
// gives write leases, and says so in the log when it does not.
func (wf *Files) CheckLeases() {
	leaseProbe.Do(func() {
		if err := ProbeLeases(wf.dir, ".git/memfsd"); err != nil {
			wf.noLeases(err)
		}
	})
}

// noLeases turns leases off for the process and says so, once.
func (wf *Files) noLeases(err error) {
	if !noLease.Swap(true) {
		wf.log.Warn("no file leases on the memory's filesystem: a pull that replaces a file the agent is writing through an open descriptor can lose that write (docs/errors.md, What a replace guarantees)", "err", err)
	}
}

// decideFunc looks at what stands at a path (absent, or the agent's bytes,
// stable while it decides) and returns what to write there, or false to
// leave it as it is.
type decideFunc func(cur Displaced) (data []byte, mode Mode, write bool)

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
func (wf *Files) replaceWorkFile(rel string, decide decideFunc) (cur Displaced, replaced bool, st *syscall.Stat_t, err error) {
	if err := wf.realParents(rel); err != nil {
		return Displaced{}, false, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	for attempt := 0; !noLease.Load(); attempt++ {
		l, err := wf.lease(rel)
		switch {
		case err == nil:
			cur, replaced, st, err := wf.replaceLeased(l, rel, decide)
			if rerr := l.Release(); err == nil && rerr != nil {
				err = fmt.Errorf("write %s: release lease: %w", rel, rerr)
			}
			return cur, replaced, st, err
		case errors.Is(err, fs.ErrNotExist):
			// Nothing there: create it, unless the agent does first.
			data, mode, ok := decide(Displaced{})
			if !ok {
				return Displaced{}, false, nil, nil
			}
			st, created, err := wf.createWorkFile(rel, data, mode)
			if err != nil || created || attempt >= 10 {
				if !created && err == nil {
					err = fmt.Errorf("write %s: the file kept appearing and vanishing", rel)
				}
				return Displaced{}, created, st, err
			}
			continue // the agent created it meanwhile: lease that one
		case errors.Is(err, ErrNoLease):
			wf.noLeases(err)
		case errors.Is(err, ErrBusy):
			wf.log.Warn("a file stayed open in another process; replacing it by rename-exchange", "path", rel, "waited", wf.leaseWaited.String())
		case errors.Is(err, ErrNotOwner):
			wf.log.Warn("a file belongs to another user and cannot be leased; replacing it by rename-exchange", "path", rel)
		case errors.Is(err, ErrNotFile), errors.Is(err, unix.EISDIR), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EXDEV):
			// A symbolic link, a folder or a file where a folder goes: the
			// exchange below handles (and never follows) each.
		default:
			return Displaced{}, false, nil, fmt.Errorf("write %s: %w", rel, err)
		}
		break
	}
	before, err := wf.readDisplacedAt(rel)
	if err != nil {
		before = Displaced{} // a device or such: the exchange fails on it
	}
	data, mode, ok := decide(before)
	if !ok {
		return before, false, nil, nil
	}
	got, st, err := wf.renameByExchange(rel, data, mode)
	return got, err == nil, st, err
}

// replaceLeased is replaceWorkFile's step under the lease l.
func (wf *Files) replaceLeased(l *Leased, rel string, decide decideFunc) (Displaced, bool, *syscall.Stat_t, error) {
	data, err := l.Read()
	if err != nil {
		return Displaced{}, false, nil, fmt.Errorf("read %s: %w", rel, err)
	}
	cur := Displaced{Existed: true, Data: data, Mode: Regular}
	if l.Executable() {
		cur.Mode = Executable
	}
	want, mode, ok := decide(cur)
	if !ok {
		return cur, false, nil, nil
	}
	if mode == Symlink {
		// A file becomes a link: nothing can be written through a link,
		// so the exchange is as safe; the lease is let go first.
		if err := l.Release(); err != nil {
			return cur, false, nil, err
		}
		got, st, err := wf.renameByExchange(rel, want, mode)
		return got, err == nil, st, err
	}
	if err := wf.journal.record(rel, cur.Data, want); err != nil {
		return cur, false, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	st, err := l.Write(want, mode == Executable)
	if err != nil {
		return cur, false, nil, fmt.Errorf("write %s: %w", rel, err)
	}
	wf.journal.written()
	if !wf.sameFile(rel, st) {
		// The agent renamed its own file over the name meanwhile: ours went
		// to the file it replaced, and the agent's stands (committed next).
		return cur, true, nil, nil
	}
	return cur, true, st, nil
}

// createWorkFile puts data at rel only if nothing stands there, and says
// whether it did.
func (wf *Files) createWorkFile(rel string, data []byte, mode Mode) (*syscall.Stat_t, bool, error) {
	st, created, err := wf.dir.Create(rel, data, mode)
	if errors.Is(err, unix.ENOTDIR) {
		st, err := wf.writeWorkFile(rel, data, mode) // a file where a folder must go
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
func (wf *Files) removeWorkFile(rel string, decide func(cur Displaced) bool) (Displaced, bool, error) {
	if wf.symlinkedParent(rel) != "" {
		return Displaced{}, false, nil // not in the work tree: nothing of ours to take
	}
	if !noLease.Load() {
		l, err := wf.lease(rel)
		switch {
		case err == nil:
			defer l.Release()
			return wf.removeLeased(l, rel, decide)
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR), errors.Is(err, ErrNotFile) && wf.isDir(rel):
			return Displaced{}, false, nil
		case errors.Is(err, ErrNoLease):
			wf.noLeases(err)
		}
	}
	before, err := wf.readDisplacedAt(rel)
	if err != nil || !before.Existed || !decide(before) {
		return before, false, nil
	}
	got, err := wf.takeByRename(rel)
	return got, err == nil && got.Existed, err
}

func (wf *Files) isDir(rel string) bool {
	st, err := wf.dir.Lstat(rel)
	return err == nil && isDirStat(st)
}

// removeLeased is removeWorkFile's step under the lease l.
func (wf *Files) removeLeased(l *Leased, rel string, decide func(cur Displaced) bool) (Displaced, bool, error) {
	data, err := l.Read()
	if err != nil {
		return Displaced{}, false, fmt.Errorf("read %s: %w", rel, err)
	}
	cur := Displaced{Existed: true, Data: data, Mode: Regular}
	if l.Executable() {
		cur.Mode = Executable
	}
	if !decide(cur) {
		return cur, false, nil
	}
	aside := wf.asideName(rel)
	if err := wf.dir.Rename(rel, aside, 0); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return cur, false, nil
		}
		return cur, false, fmt.Errorf("delete %s: %w", rel, err)
	}
	if !wf.sameFile(aside, l.Stat()) {
		// The agent renamed a new file over the name between the lease and
		// the rename: that one is theirs, and goes back.
		if err := wf.dir.Rename(aside, rel, unix.RENAME_NOREPLACE); err != nil {
			if err := wf.keepAside(rel, aside); err != nil {
				return cur, false, err
			}
		}
		return cur, false, nil
	}
	defer wf.dir.Remove(aside)
	if !l.BreakPending() {
		wf.removeEmptyParents(rel)
		return cur, true, nil
	}
	// A writer is waiting to open the file it looked up before the rename:
	// let it, wait for it to close, and keep what it wrote.
	if err := l.Reacquire(wf.leaseWaitLeft()); err != nil {
		wf.log.Warn("a writer kept a removed file open; what it writes after now is not kept", "path", rel, "err", err)
	}
	after, err := l.Read()
	if err != nil || bytes.Equal(after, cur.Data) {
		wf.removeEmptyParents(rel)
		return cur, true, nil
	}
	// The agent wrote to it after the remote removed it: it stays.
	if _, created, err := wf.dir.Create(rel, after, cur.Mode); err != nil || !created {
		copyRel, kerr := wf.keepCopy(rel, after, cur.Mode)
		if kerr != nil {
			return cur, false, kerr
		}
		wf.log.Warn("kept a file written while the sync removed it beside its path", "path", rel, "copy", copyRel)
		return cur, false, nil
	}
	wf.log.Info("kept a file written while the sync removed it; it will be committed next", "path", rel)
	return cur, false, nil
}

// keepAside moves the file at aside to a conflict copy of rel.
func (wf *Files) keepAside(rel, aside string) error {
	d, err := wf.readDisplacedAt(aside)
	if err != nil {
		return fmt.Errorf("keep %s: %w", rel, err)
	}
	copyRel := ConflictName(rel, blobHash(d.Data))
	if err := wf.dir.Rename(aside, copyRel, 0); err != nil {
		return fmt.Errorf("keep %s: %w", copyRel, err)
	}
	wf.log.Warn("kept a file beside its path as a conflict copy", "path", rel, "copy", copyRel)
	return nil
}

// Put puts data at rel and returns exactly what it displaced: under a
// lease in place (replaceWorkFile), else by renameByExchange.
func (wf *Files) Put(rel string, data []byte, mode Mode) (Displaced, *syscall.Stat_t, error) {
	got, _, st, err := wf.replaceWorkFile(rel, func(Displaced) ([]byte, Mode, bool) { return data, mode, true })
	return got, st, err
}

// Take removes rel and returns what it removed (see removeWorkFile);
// folders it leaves empty go too.
func (wf *Files) Take(rel string) (Displaced, error) {
	got, _, err := wf.removeWorkFile(rel, func(Displaced) bool { return true })
	return got, err
}

// putBack restores an agent's bytes d that a replace or delete displaced
// although they were not the version expected; ours is what that replace
// put in their place. Each exchange must displace exactly what was put
// there before; anything else is a write the agent made meanwhile, which is
// newer and goes back in turn. Should the agent keep winning for ten
// rounds, the bytes last displaced are kept beside the file as a conflict
// copy: nothing is dropped.
func (wf *Files) putBack(rel string, d Displaced, ours plumbing.Hash, oursMode Mode) error {
	expect, expectMode := ours, oursMode
	for attempt := 0; attempt < 10; attempt++ {
		if !d.Existed {
			return nil
		}
		got, _, err := wf.renameByExchange(rel, d.Data, d.Mode)
		if err != nil {
			return err
		}
		if got.Is(expect, expectMode) || !got.Existed {
			return nil // what went out is what we had put there
		}
		// A newer write landed on what we had put there: it goes back in,
		// displacing the older bytes we just placed.
		expect, expectMode = blobHash(d.Data), d.Mode
		d = got
	}
	if !d.Existed {
		return nil
	}
	copyRel, err := wf.keepCopy(rel, d.Data, d.Mode)
	if err != nil {
		return err
	}
	wf.log.Warn("a file kept changing while memfsd replaced it; the last displaced version is kept beside it", "path", rel, "copy", copyRel)
	return nil
}

// CreateIfAbsent writes data at rel when nothing stands there and returns
// its stat; a file the agent put there meanwhile is left alone (nil stat).
func (wf *Files) CreateIfAbsent(rel string, data []byte, mode Mode) (*syscall.Stat_t, error) {
	if err := wf.realParents(rel); err != nil {
		return nil, err
	}
	st, _, err := wf.dir.Create(rel, data, mode)
	return st, err
}

// Update is what a pull makes of one file: it held From (a zero hash:
// absent) and becomes To, whose bytes are Data (nil when To is absent).
type Update struct {
	From, To         plumbing.Hash
	FromMode, ToMode Mode
	Data             []byte
}

// Pulled is what Pull did to one file.
type Pulled struct {
	// Replaced: the file is To now, or To merged with the agent's write.
	Replaced bool
	// Kept: the agent's write stays (merged, left as written, or put back
	// after the exchange displaced it); it shows as modified.
	Kept bool
	// Stat is the new file's stat for the index, nil when the agent's
	// own file stands at the name.
	Stat *syscall.Stat_t
}

// Pull brings rel from u.From to u.To in one step. What stands there is
// read while no one else can write it, and anything other than the old or
// the new version is an agent's write that landed during the sync: it is
// merged with the new version where the lines allow (merge3), else left
// as written.
func (wf *Files) Pull(rel string, u Update) (Pulled, error) {
	var got Displaced
	var replaced, kept bool
	var err error
	var st *syscall.Stat_t
	if u.To.IsZero() {
		got, replaced, err = wf.removeWorkFile(rel, func(cur Displaced) bool {
			return cur.Is(u.From, u.FromMode)
		})
		kept = got.Existed && !replaced
	} else {
		got, replaced, st, err = wf.replaceWorkFile(rel, func(cur Displaced) ([]byte, Mode, bool) {
			if !cur.Existed || cur.Is(u.From, u.FromMode) || cur.Is(u.To, u.ToMode) {
				return u.Data, u.ToMode, true
			}
			// The agent wrote it during the sync: both edits, where they
			// touch different lines.
			if u.From.IsZero() || cur.Mode == Symlink || u.ToMode == Symlink {
				return nil, 0, false
			}
			base, err := wf.store.Blob(u.From)
			if err != nil {
				return nil, 0, false
			}
			merged, ok := merge3.Merge(base, cur.Data, u.Data)
			if !ok {
				return nil, 0, false
			}
			kept = true
			return merged, cur.Mode, true
		})
		if !replaced {
			kept = got.Existed
		}
	}
	if err != nil {
		return Pulled{}, err
	}
	if replaced && got.Existed && !got.Is(u.From, u.FromMode) && !got.Is(u.To, u.ToMode) && !kept {
		// The rename-exchange (no lease) displaced a write made after
		// the read: it goes back in place.
		if err := wf.putBack(rel, got, u.To, u.ToMode); err != nil {
			return Pulled{}, err
		}
		kept = true
	}
	return Pulled{Replaced: replaced, Kept: kept, Stat: st}, nil
}
