package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DefaultLockWait is how long a write waits on a lock held by someone else
// (the git CLI, a person) before it gives up.
const DefaultLockWait = 5 * time.Second

// DefaultStaleLockAge is the age past which a lock memfsd itself left
// behind is removed at start-up: memfsd never holds one that long (a
// commit's milliseconds, never across the network). A lock of anyone else
// is never removed: a person's `git commit` holds index.lock for as long
// as its editor is open.
const DefaultStaleLockAge = time.Minute

// ErrLocked is returned when a git lock file stayed taken for the whole wait.
var ErrLocked = errors.New("lock held by another process")

// LockFile is git's lock protocol: "<path>.lock" created exclusively, written,
// then renamed over <path> to commit, or removed to roll back.
type LockFile struct {
	target string
	path   string
	f      *os.File
	spare  string // the spare's own name, dropped when the lock ends
	done   bool
}

// AcquireLock takes <target>.lock, retrying until wait has passed. With
// spares, the lock is a spare file linked into place (no new inode on the
// write's path, and a restart can tell the lock is memfsd's: see
// ClearStaleLocks); without, it is created with O_CREAT|O_EXCL. With
// spares, a missing folder for the lock is made.
func AcquireLock(target string, wait time.Duration, sp *Spares) (*LockFile, error) {
	p, err := PrepareLock(target, nil, sp)
	if err != nil {
		return nil, err
	}
	return p.Acquire(wait)
}

// PendingLock is a lock file written before it is taken: its content goes
// into a spare file first (hardened by the next syncfs with everything
// else), and Acquire only links it into place. The lock is then held for
// the few system calls between Acquire and Commit, not for the work that
// made the content: a git command that starts meanwhile finds no lock.
type PendingLock struct {
	target    string
	data      []byte
	sp        *Spares
	spare     *os.File
	spareName string
}

// PrepareLock writes data for <target>.lock without taking it.
func PrepareLock(target string, data []byte, sp *Spares) (*PendingLock, error) {
	p := &PendingLock{target: target, data: data, sp: sp}
	if sp == nil {
		return p, nil
	}
	var err error
	if p.spare, p.spareName, err = sp.take(); err != nil {
		return nil, fmt.Errorf("take %s.lock: %w", target, err)
	}
	if len(data) > 0 {
		if _, err := p.spare.Write(data); err != nil {
			p.Drop()
			return nil, fmt.Errorf("write %s.lock: %w", target, err)
		}
	}
	return p, nil
}

// Drop gives up a lock that was prepared and not taken.
func (p *PendingLock) Drop() {
	if p.spare != nil {
		p.spare.Close()
		p.sp.give(p.spareName)
		p.spare = nil
	}
}

// Acquire takes the prepared lock, retrying until wait has passed.
func (p *PendingLock) Acquire(wait time.Duration) (*LockFile, error) {
	path := p.target + ".lock"
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for {
		lk, err := p.TryAcquire()
		if lk != nil || err != nil {
			return lk, err
		}
		if time.Now().After(deadline) {
			p.Drop()
			return nil, fmt.Errorf("take %s: %w", path, lockedError(path, wait, p.sp))
		}
		time.Sleep(delay)
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}

// TryAcquire takes the prepared lock if no one holds it: nil, nil when
// someone does (the lock stays prepared, to try again).
func (p *PendingLock) TryAcquire() (*LockFile, error) {
	path := p.target + ".lock"
	var f *os.File
	var err error
	if p.spare != nil {
		err = linkExclusive(p.spareName, path)
		if errors.Is(err, fs.ErrNotExist) { // a new ref's folder
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = linkExclusive(p.spareName, path)
			}
		}
		if err == nil {
			f = p.spare
		}
	} else {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil && len(p.data) > 0 {
			if _, werr := f.Write(p.data); werr != nil {
				f.Close()
				os.Remove(path)
				return nil, fmt.Errorf("write %s: %w", path, werr)
			}
		}
	}
	switch {
	case err == nil:
		lk := &LockFile{target: p.target, path: path, f: f, spare: p.spareName}
		p.spare = nil
		return lk, nil
	case errors.Is(err, fs.ErrExist):
		return nil, nil
	}
	p.Drop()
	return nil, fmt.Errorf("take %s: %w", path, err)
}

// Return gives back a lock taken by TryAcquire, unused: its name goes,
// its prepared content stays, to take again.
func (p *PendingLock) Return(l *LockFile) {
	if l == nil || l.done {
		return
	}
	l.done = true
	_ = os.Remove(l.path)
	if l.spare != "" {
		p.spare, p.spareName = l.f, l.spare
		return
	}
	_ = l.f.Close()
}

// LockedError is the error of a lock at path held by someone else for
// the whole wait (ErrLocked, with who may hold it and the next step).
func LockedError(path string, wait time.Duration, sp *Spares) error {
	return lockedError(path, wait, sp)
}

// Replace sets the prepared content to data.
func (p *PendingLock) Replace(data []byte) error {
	p.data = data
	if p.spare == nil {
		return nil
	}
	if err := p.spare.Truncate(0); err != nil {
		return fmt.Errorf("write %s.lock: %w", p.target, err)
	}
	if _, err := p.spare.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write %s.lock: %w", p.target, err)
	}
	return nil
}

// Replace sets the lock file's content to data (what was written before
// is dropped).
func (l *LockFile) Replace(data []byte) error {
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if _, err := l.f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	return nil
}

// Write replaces the lock file's content.
func (l *LockFile) Write(data []byte, sync bool) error {
	if _, err := l.f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", l.path, err)
	}
	if sync {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", l.path, err)
		}
	}
	return nil
}

// Commit renames the lock over its target.
func (l *LockFile) Commit() error {
	l.done = true
	defer l.dropSpare()
	if err := l.f.Close(); err != nil {
		_ = os.Remove(l.path)
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	if err := os.Rename(l.path, l.target); err != nil {
		_ = os.Remove(l.path)
		return fmt.Errorf("rename %s: %w", l.path, err)
	}
	return nil
}

// Rename renames the lock over its target, like Commit, but leaves the
// spare's own name for Finish to drop: the fewest system calls while the
// lock is held (a window under another lock). Its file is closed first.
func (l *LockFile) Rename() error {
	l.done = true
	if err := l.f.Close(); err != nil {
		_ = os.Remove(l.path)
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	if err := os.Rename(l.path, l.target); err != nil {
		_ = os.Remove(l.path)
		return fmt.Errorf("rename %s: %w", l.path, err)
	}
	return nil
}

// Finish drops what a Rename left (the spare's own name).
func (l *LockFile) Finish() { l.dropSpare() }

func (l *LockFile) dropSpare() {
	if l.spare != "" {
		_ = os.Remove(l.spare)
	}
}

// Rollback removes the lock, leaving the target as it was. Safe after commit.
func (l *LockFile) Rollback() {
	if l.done {
		return // committed: the name may already be someone else's lock
	}
	l.done = true
	_ = l.f.Close()
	_ = os.Remove(l.path)
	l.dropSpare()
}

// Abandon closes the lock's file and leaves the lock in place, as a
// process killed while holding it does (what ClearStaleLocks and git's own
// error message are for); tests use it to stage that crash.
func (l *LockFile) Abandon() error {
	l.done = true
	return l.f.Close()
}

// lockedError says who may hold the lock at path and what to do: a
// lock held for long is a git command waiting on a person (an editor open
// for `git commit`) or one that crashed. A lock a running memfsd holds
// (its spare file's name carries its pid) is named so, and never said to
// be removable: it is let go when that process's step ends.
func lockedError(path string, wait time.Duration, sp *Spares) error {
	held := ""
	fi, err := os.Lstat(path)
	if err == nil {
		held = fmt.Sprintf(", held for %s", time.Since(fi.ModTime()).Round(time.Second))
	}
	if err == nil && sp != nil {
		if o, ok := lockHolder(sp.gitDir, fi); ok {
			who := "this memfsd process"
			if o != thisProcess() {
				who = fmt.Sprintf("memfsd pid %d%s", o.Pid, procCommand(o.Pid))
			}
			return &heldByMemfsd{fmt.Errorf("%w (waited %s%s): held by %s, which is running: it lets go when its step ends (do not remove %s); try again then", ErrLocked, wait, held, who, path)}
		}
	}
	return fmt.Errorf("%w (waited %s%s): a git command may be running, e.g. `git commit` with its editor open; remove %s if no git command is running", ErrLocked, wait, held, path)
}

// heldByMemfsd is ErrLocked for a lock a running memfsd holds: its next
// step is to wait, never to remove the lock (retry.NextStep uses it).
type heldByMemfsd struct{ err error }

func (e *heldByMemfsd) Error() string { return e.err.Error() }
func (e *heldByMemfsd) Unwrap() error { return e.err }

// NextStep implements retry.Stepper.
func (e *heldByMemfsd) NextStep() string {
	return "another memfsd process (named above: the daemon, or a one-shot command beside it) holds the lock for one step: nothing to remove; memfsd tries again at the next sync (a one-shot command beside a running daemon goes through it)"
}

// lockHolder is the live memfsd process whose spare file (in gitDir's
// spare folder) the lock fi is a link to.
func lockHolder(gitDir string, fi fs.FileInfo) (procOwner, bool) {
	if nlink(fi) < 2 || !fi.Mode().IsRegular() {
		return procOwner{}, false
	}
	entries, err := listSpares(gitDir)
	if err != nil {
		return procOwner{}, false
	}
	ino := Inode(fi)
	for _, sfi := range entries {
		o, ok := spareOwner(sfi.Name())
		if !ok {
			continue
		}
		if Inode(sfi) == ino && o.Alive() {
			return o, true
		}
	}
	return procOwner{}, false
}

// procCommand is " (`memfsd <subcommand>`)" for a memfsd process ("" when
// unknown).
func procCommand(pid int) string {
	if c := procSubcommand(pid); c != "" {
		return " (`memfsd " + c + "`)"
	}
	return ""
}

// procSubcommand is a memfsd process's subcommand (run, sync, ...), from
// its command line's first word after the program ("" when unknown);
// nothing else of the command line is shown (it may hold a URL).
func procSubcommand(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	for _, a := range args[1:] {
		if a != "" && !strings.HasPrefix(a, "-") {
			if len(a) > 20 || strings.Trim(a, "abcdefghijklmnopqrstuvwxyz") != "" {
				return "" // a flag's value, not the subcommand
			}
			return a
		}
	}
	return ""
}

// ClearStaleLocks removes the lock files under gitDir (index.lock,
// HEAD.lock, ref locks) that memfsd itself left (a crash) once older than
// maxAge: memfsd's locks are recognised by their inode, which still has a
// name in .git/memfsd/spare (see linkExclusive). Any other lock may be a
// live git's, however old (`git commit` holds index.lock while its editor
// is open): it is kept, and logged with the next step.
func ClearStaleLocks(gitDir string, maxAge time.Duration, log *slog.Logger) error {
	now := time.Now()
	candidates := []string{
		filepath.Join(gitDir, "index.lock"),
		filepath.Join(gitDir, "HEAD.lock"),
		filepath.Join(gitDir, "packed-refs.lock"),
		filepath.Join(gitDir, "config.lock"),
	}
	err := filepath.WalkDir(filepath.Join(gitDir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(p, ".lock") {
			candidates = append(candidates, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var ours map[uint64]string
	for _, p := range candidates {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		age := now.Sub(fi.ModTime())
		if age < maxAge {
			continue
		}
		if ours == nil {
			ours = OwnLockSpares(gitDir)
		}
		spare, mine := ours[Inode(fi)]
		if !mine {
			if o, ok := lockHolder(gitDir, fi); ok {
				// Another memfsd that runs (the daemon, or a one-shot
				// command beside it): its lock, for one step.
				if log != nil {
					log.Info("a git lock is held by another memfsd process that is running: kept; it lets go when its step ends",
						"path", p, "pid", o.Pid, "command", procSubcommand(o.Pid), "age", age.Round(time.Second).String())
				}
				continue
			}
			if log != nil {
				log.Warn("a git lock is held, not by memfsd: kept (remove it if no git command is running)",
					"path", p, "age", age.Round(time.Second).String())
			}
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale lock %s: %w", p, err)
		}
		_ = os.Remove(spare)
		if log != nil {
			log.Warn("removed a lock memfsd left (a crash)", "path", p, "age", age.Round(time.Second).String())
		}
	}
	return nil
}

// OwnLockSpares maps the inodes of spare files that have another name too
// (a lock memfsd took by linking them) to their name in the spare folder,
// leaving out those of another memfsd process that still runs: its locks
// are its own, however old.
func OwnLockSpares(gitDir string) map[uint64]string {
	spareDir := filepath.Join(gitDir, "memfsd", "spare")
	ours := map[uint64]string{}
	entries, err := listSpares(gitDir)
	if err != nil {
		return ours
	}
	for _, fi := range entries {
		if o, ok := spareOwner(fi.Name()); ok && o != thisProcess() && o.Alive() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && fi.Mode().IsRegular() {
			ours[st.Ino] = filepath.Join(spareDir, fi.Name())
		}
	}
	return ours
}

// Inode is fi's inode number (0 when the platform has none).
func Inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
