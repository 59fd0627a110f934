package gitmem

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultLockWait is how long a write waits on a lock held by someone else
// (the git CLI, a person) before it gives up.
const DefaultLockWait = 5 * time.Second

// DefaultStaleLockAge is the age past which a lock left behind is removed at
// start-up: git never holds one that long.
const DefaultStaleLockAge = time.Minute

// ErrLocked is returned when a git lock file stayed taken for the whole wait.
var ErrLocked = errors.New("lock held by another process")

// lockFile is git's lock protocol: "<path>.lock" created exclusively, written,
// then renamed over <path> to commit, or removed to roll back.
type lockFile struct {
	target string
	path   string
	f      *os.File
	spare  string // the spare's own name, dropped when the lock ends
	done   bool
}

// acquireLock takes <target>.lock, retrying until wait has passed. With
// spares, the lock is a spare file linked into place (no new inode on the
// write's path); without, it is created with O_CREAT|O_EXCL.
func acquireLock(target string, wait time.Duration, sp *spares) (*lockFile, error) {
	path := target + ".lock"
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	var spare *os.File
	var spareName string
	if sp != nil {
		var err error
		if spare, spareName, err = sp.take(); err != nil {
			return nil, fmt.Errorf("take %s: %w", path, err)
		}
	}
	for {
		var f *os.File
		var err error
		if spare != nil {
			if err = linkExclusive(spareName, path); err == nil {
				f = spare
			}
		} else {
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		}
		if err == nil {
			return &lockFile{target: target, path: path, f: f, spare: spareName}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			if spare != nil {
				spare.Close()
				sp.give(spareName)
			}
			return nil, fmt.Errorf("take %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			if spare != nil {
				spare.Close()
				sp.give(spareName)
			}
			return nil, fmt.Errorf("take %s: %w (waited %s; remove it if no git process runs)", path, ErrLocked, wait)
		}
		time.Sleep(delay)
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}

// write replaces the lock file's content.
func (l *lockFile) write(data []byte, sync bool) error {
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

// commit renames the lock over its target.
func (l *lockFile) commit() error {
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

func (l *lockFile) dropSpare() {
	if l.spare != "" {
		_ = os.Remove(l.spare)
	}
}

// rollback removes the lock, leaving the target as it was. Safe after commit.
func (l *lockFile) rollback() {
	if l.done {
		return // committed: the name may already be someone else's lock
	}
	l.done = true
	_ = l.f.Close()
	_ = os.Remove(l.path)
	l.dropSpare()
}

// ClearStaleLocks removes lock files under gitDir (index.lock, HEAD.lock,
// ref locks) older than maxAge: a crash left them, and git itself never
// holds a lock that long. It logs each removal.
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
	for _, p := range candidates {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		age := now.Sub(fi.ModTime())
		if age < maxAge {
			continue
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove stale lock %s: %w", p, err)
		}
		if log != nil {
			log.Warn("removed stale git lock left by a crash", "path", p, "age", age.Round(time.Second).String())
		}
	}
	return nil
}
