package gitmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memfsd/memfsd/gitstore"
)

// DefaultBackupMaxAge is the age past which PruneBackups may remove a backup ref.
const DefaultBackupMaxAge = 30 * 24 * time.Hour

// DefaultBackupKeep is how many of the newest backup refs PruneBackups always keeps.
const DefaultBackupKeep = 10

// PruneBackups deletes backup refs (refs/memfsd/backup/<unix-seconds>, see
// BackupRefPrefix and Backups) older than maxAge, always keeping the newest
// keep of them; it returns the refs removed, oldest first. Refs are removed
// with git's lock protocol (take <ref>.lock exclusively, then remove the
// ref, then the lock) so a git CLI working beside us never sees a torn
// state; a packed backup ref (in packed-refs) is left alone and reported.
//
// The rule, exactly: backup refs are ranked by their seconds, newest first,
// packed ones included; the first keep are never removed, whatever their
// age; each other one is removed when now minus its seconds is more than
// maxAge. Names that are not decimal seconds are not memfsd's and are
// neither counted nor touched.
func (r *Repo) PruneBackups(now time.Time, maxAge time.Duration, keep int) ([]string, error) {
	if keep < 0 {
		return nil, fmt.Errorf("prune backups: keep %d is negative", keep)
	}
	if maxAge < 0 {
		return nil, fmt.Errorf("prune backups: max age %s is negative", maxAge)
	}
	r.mu.Lock()
	defer r.unlock()

	refs, err := listBackups(r.GitDir)
	if err != nil {
		return nil, fmt.Errorf("prune backups: %w", err)
	}
	if len(refs) <= keep {
		return nil, nil
	}
	// Oldest first: the candidates are everything but the newest keep.
	var removed []string
	var errs []error
	for _, b := range refs[:len(refs)-keep] {
		if now.Sub(time.Unix(b.secs, 0)) <= maxAge {
			continue
		}
		if b.packed {
			r.log.Warn("old backup ref is packed; left alone", "ref", b.name)
			continue
		}
		ok, err := r.removeBackup(b.name)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed = append(removed, b.name)
			r.log.Info("removed old backup ref", "ref", b.name, "age", now.Sub(time.Unix(b.secs, 0)).Round(time.Second).String())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("prune backups: %w", err)
	}
	return removed, nil
}

// backupRef is one backup ref found on disk.
type backupRef struct {
	name   string
	secs   int64
	packed bool // in packed-refs (loose or not)
}

// listBackups finds the backup refs, loose and packed, oldest first.
func listBackups(gitDir string) ([]backupRef, error) {
	byName := map[string]*backupRef{}
	add := func(name string, packed bool) {
		secs, err := strconv.ParseInt(strings.TrimPrefix(name, BackupRefPrefix), 10, 64)
		if err != nil {
			return // not a name memfsd writes
		}
		b := byName[name]
		if b == nil {
			b = &backupRef{name: name, secs: secs}
			byName[name] = b
		}
		b.packed = b.packed || packed
	}
	entries, err := os.ReadDir(filepath.Join(gitDir, filepath.FromSlash(BackupRefPrefix)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".lock") {
			add(BackupRefPrefix+e.Name(), false)
		}
	}
	packed, err := gitstore.PackedRefNames(gitDir, BackupRefPrefix)
	if err != nil {
		return nil, err
	}
	for _, name := range packed {
		add(name, true)
	}
	out := make([]backupRef, 0, len(byName))
	for _, b := range byName {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].secs != out[j].secs {
			return out[i].secs < out[j].secs
		}
		return out[i].name < out[j].name
	})
	return out, nil
}

// removeBackup deletes the loose ref name under its lock, and its reflog if
// git kept one. It reports false when the ref was already gone or turned
// out to be packed as well (removing the loose file would then bring back
// the packed value, not delete the ref).
func (r *Repo) removeBackup(name string) (bool, error) {
	path := filepath.Join(r.GitDir, filepath.FromSlash(name))
	lk, err := gitstore.AcquireLock(path, r.opts.LockWait, r.spares)
	if err != nil {
		return false, fmt.Errorf("remove %s: %w", name, err)
	}
	defer lk.Rollback()
	// Checked under the lock: git pack-refs may have packed it meanwhile.
	packed, err := gitstore.PackedRefNames(r.GitDir, name)
	if err != nil {
		return false, fmt.Errorf("remove %s: %w", name, err)
	}
	for _, p := range packed {
		if p == name {
			r.log.Warn("old backup ref is packed; left alone", "ref", name)
			return false, nil
		}
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("remove %s: %w", name, err)
	}
	if err := os.Remove(filepath.Join(r.GitDir, "logs", filepath.FromSlash(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("remove reflog of %s: %w", name, err)
	}
	return true, nil
}
