// Package backups keeps the local tips memfsd sets aside before it takes a
// remote's replaced history: one ref each, refs/memfsd/backup/<unix-seconds>,
// made by compare-and-swap from nothing, listed loose and packed, and pruned
// by age past the newest few, with git's lock protocol so that a git CLI
// working beside memfsd never sees a torn state. It works on refs only
// (package gitstore); the repository calls it under its lock.
package backups

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitstore"
)

// RefPrefix names the refs that keep a local tip before a restore.
const RefPrefix = "refs/memfsd/backup/"

// DefaultMaxAge is the age past which Prune may remove a backup ref.
const DefaultMaxAge = 30 * 24 * time.Hour

// DefaultKeep is how many of the newest backup refs Prune always keeps.
const DefaultKeep = 10

// Refs are the backup refs of one repository's .git.
type Refs struct {
	GitDir   string
	LockWait time.Duration    // how long a lock held by someone else is waited on
	Spares   *gitstore.Spares // spare files for git's locks
	Log      *slog.Logger
}

// Make keeps tip under refs/memfsd/backup/<unix-seconds> (the next free
// second), with reflog as its reflog entry, and returns the ref's name.
func (b Refs) Make(tip plumbing.Hash, sync bool, reflog *gitstore.ReflogEntry) (string, error) {
	now := time.Now().Unix()
	for i := 0; ; i++ {
		name := RefPrefix + strconv.FormatInt(now+int64(i), 10)
		if _, err := os.Stat(filepath.Join(b.GitDir, filepath.FromSlash(name))); err == nil {
			continue
		}
		if err := gitstore.CASRef(b.GitDir, name, plumbing.ZeroHash, tip, b.LockWait, sync, b.Spares, reflog); err != nil {
			return "", fmt.Errorf("backup %s: %w", gitstore.Short(tip), err)
		}
		return name, nil
	}
}

// List lists the loose backup refs.
func (b Refs) List() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(b.GitDir, "refs", "memfsd", "backup"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && filepath.Ext(e.Name()) != ".lock" {
			out = append(out, RefPrefix+e.Name())
		}
	}
	return out, nil
}

// Prune deletes backup refs (refs/memfsd/backup/<unix-seconds>) older
// than maxAge, always keeping the newest keep of them; it returns the refs removed, oldest first. Refs are removed
// with git's lock protocol (take <ref>.lock exclusively, then remove the
// ref, then the lock) so a git CLI working beside us never sees a torn
// state; a packed backup ref (in packed-refs) is left alone and reported.
//
// The rule, exactly: backup refs are ranked by their seconds, newest first,
// packed ones included; the first keep are never removed, whatever their
// age; each other one is removed when now minus its seconds is more than
// maxAge. Names that are not decimal seconds are not memfsd's and are
// neither counted nor touched.
func (b Refs) Prune(now time.Time, maxAge time.Duration, keep int) ([]string, error) {
	if keep < 0 {
		return nil, fmt.Errorf("prune backups: keep %d is negative", keep)
	}
	if maxAge < 0 {
		return nil, fmt.Errorf("prune backups: max age %s is negative", maxAge)
	}
	refs, err := listBackups(b.GitDir)
	if err != nil {
		return nil, fmt.Errorf("prune backups: %w", err)
	}
	if len(refs) <= keep {
		return nil, nil
	}
	// Oldest first: the candidates are everything but the newest keep.
	var removed []string
	var errs []error
	for _, old := range refs[:len(refs)-keep] {
		if now.Sub(time.Unix(old.secs, 0)) <= maxAge {
			continue
		}
		if old.packed {
			b.Log.Warn("old backup ref is packed; left alone", "ref", old.name)
			continue
		}
		ok, err := b.remove(old.name)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed = append(removed, old.name)
			b.Log.Info("removed old backup ref", "ref", old.name, "age", now.Sub(time.Unix(old.secs, 0)).Round(time.Second).String())
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
		secs, err := strconv.ParseInt(strings.TrimPrefix(name, RefPrefix), 10, 64)
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
	entries, err := os.ReadDir(filepath.Join(gitDir, filepath.FromSlash(RefPrefix)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".lock") {
			add(RefPrefix+e.Name(), false)
		}
	}
	packed, err := gitstore.PackedRefNames(gitDir, RefPrefix)
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

// remove deletes the loose ref name under its lock, and its reflog if
// git kept one. It reports false when the ref was already gone or turned
// out to be packed as well (removing the loose file would then bring back
// the packed value, not delete the ref).
func (b Refs) remove(name string) (bool, error) {
	path := filepath.Join(b.GitDir, filepath.FromSlash(name))
	lk, err := gitstore.AcquireLock(path, b.LockWait, b.Spares)
	if err != nil {
		return false, fmt.Errorf("remove %s: %w", name, err)
	}
	defer lk.Rollback()
	// Checked under the lock: git pack-refs may have packed it meanwhile.
	packed, err := gitstore.PackedRefNames(b.GitDir, name)
	if err != nil {
		return false, fmt.Errorf("remove %s: %w", name, err)
	}
	for _, p := range packed {
		if p == name {
			b.Log.Warn("old backup ref is packed; left alone", "ref", name)
			return false, nil
		}
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("remove %s: %w", name, err)
	}
	if err := os.Remove(filepath.Join(b.GitDir, "logs", filepath.FromSlash(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("remove reflog of %s: %w", name, err)
	}
	return true, nil
}
