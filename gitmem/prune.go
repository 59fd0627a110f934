package gitmem

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Backup refs are kept 30 days; the newest 10 always stay.
const (
	DefaultBackupMaxAge = 30 * 24 * time.Hour
	DefaultBackupKeep   = 10
)

// PruneBackups deletes the backup refs (refs/memfsd/backup/<unix-seconds>)
// older than maxAge at now, always keeping the newest keep of them, and
// returns the refs removed. Each is removed under its <ref>.lock, as git
// does, so a git command beside us never sees half a ref.
func (r *Repo) PruneBackups(now time.Time, maxAge time.Duration, keep int) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	refs, err := r.Backups()
	if err != nil {
		return nil, fmt.Errorf("prune backups: %w", err)
	}
	type backup struct {
		name string
		at   int64
	}
	var bs []backup
	for _, name := range refs {
		at, err := strconv.ParseInt(strings.TrimPrefix(name, BackupRefPrefix), 10, 64)
		if err != nil {
			continue // not one of ours: leave it
		}
		bs = append(bs, backup{name, at})
	}
	slices.SortFunc(bs, func(a, b backup) int { return int(b.at - a.at) }) // newest first
	var removed []string
	for i, b := range bs {
		if i < keep || now.Sub(time.Unix(b.at, 0)) <= maxAge {
			continue
		}
		if err := removeRef(r.GitDir, b.name, r.opts.LockWait); err != nil {
			return removed, fmt.Errorf("prune backups: %w", err)
		}
		removed = append(removed, b.name)
	}
	if len(removed) > 0 {
		r.log.Info("pruned old backup refs", "removed", len(removed), "kept", len(bs)-len(removed))
	}
	return removed, nil
}

// removeRef deletes a loose ref while holding its lock.
func removeRef(gitDir, name string, wait time.Duration) error {
	path := filepath.Join(gitDir, filepath.FromSlash(name))
	lk, err := acquireLock(path, wait, nil)
	if err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	defer lk.rollback()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}
