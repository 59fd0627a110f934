// Package records is memfsd's own records of one unit (an agent or a
// shared repository), in <unit>/records/ beside the memory folder and out
// of the agent's reach: what its guards hold back (deletions, credentials,
// broken front matter, changes that break letta-code's tree rules more, a
// remote update or a push), files over their limit, paths git cannot
// track. Every route to a decision (the daemon, `memfsd sync`, a restart)
// reads the same state from them.
package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/memfsd/memfsd/reminders"
)

// The records' files.
const (
	// HeldDeletesFile lists the deletions the mass-delete guard held.
	HeldDeletesFile = "held-deletes.json"
	// secretHeldFile maps files held by the secret guard to the pattern.
	secretHeldFile = "secret-held.json"
	// HeldFile is the remote update held by the remote-deletion guard.
	HeldFile = "held-remote.json"
	// limitsFile lists files committed over their front matter's limit.
	limitsFile = "limit-exceeded.json"
	// heldPushFile is the local tip whose push the outgoing check held (a
	// committed mass deletion) and the files it deletes.
	heldPushFile = "held-push.json"
)

// frontMatterHeldFile lists direct writes held uncommitted because they
// broke front matter that parsed at HEAD (SPEC §8): committed, the keys in
// it (limit, read_only) would silently stop applying.
const frontMatterHeldFile = "frontmatter-held.json"

// pathSkippedFile maps the untrackable paths found in the work tree (a
// .git below the root, ...) to why they are not committed. It is what
// makes each one logged once, across the daemon, `memfsd sync` and
// restarts, rather than at every scan.
const pathSkippedFile = "path-skipped.json"

// Book is one unit's records.
type Book struct {
	Dir string // <unit>/records
	// Exists says whether a path is still in the work tree (a record of
	// a file deleted since drops it).
	Exists func(rel string) bool
}

func (b Book) path(name string) string { return filepath.Join(b.Dir, name) }

// Write writes a record atomically (temporary file, rename), 0600.
func Write(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// ReadStamp reads a time mark (Unix nanoseconds; 0 when none).
func ReadStamp(p string) int64 {
	data, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// Held reads the held-deletes record (nil when none).
func (b Book) Held() []string {
	data, err := os.ReadFile(b.path(HeldDeletesFile))
	if err != nil {
		return nil
	}
	var paths []string
	if json.Unmarshal(data, &paths) != nil {
		return nil
	}
	return paths
}

// WriteHeld replaces the held-deletes record (removes it for none).
func (b Book) WriteHeld(paths []string) error {
	p := b.path(HeldDeletesFile)
	if len(paths) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record held deletes: %w", err)
		}
		return nil
	}
	slices.Sort(paths)
	data, _ := json.Marshal(slices.Compact(paths))
	return Write(p, data)
}

// UpdateSecrets adds files the secret guard held and drops committed ones.
func (b Book) UpdateSecrets(held map[string]string, committed []string) error {
	rec := b.Secrets()
	changed := false
	for p := range rec {
		if !b.Exists(p) {
			delete(rec, p) // deleted: no longer held
			changed = true
		}
	}
	for p, pattern := range held {
		if rec[p] != pattern {
			rec[p], changed = pattern, true
		}
	}
	for _, p := range committed {
		if _, ok := rec[p]; ok {
			delete(rec, p)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return b.writeSecrets(rec)
}

func (b Book) Secrets() map[string]string {
	rec := map[string]string{}
	if data, err := os.ReadFile(b.path(secretHeldFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

func (b Book) writeSecrets(rec map[string]string) error {
	p := b.path(secretHeldFile)
	if len(rec) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record held secrets: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(rec)
	return Write(p, data)
}

// Held is a remote update the remote-deletion guard did not apply.
type Held struct {
	Remote string   `json:"remote"`
	Paths  []string `json:"paths"`
}

func (b Book) HeldRemote() Held { return b.readHeldRecord(HeldFile) }

func (b Book) HeldPush() Held { return b.readHeldRecord(heldPushFile) }

func (b Book) readHeldRecord(name string) Held {
	var h Held
	if data, err := os.ReadFile(b.path(name)); err == nil {
		_ = json.Unmarshal(data, &h)
	}
	return h
}

// WriteHeldRemote records the held update (the zero value clears it).
func (b Book) WriteHeldRemote(h Held) error { return b.writeHeldRecord(HeldFile, h) }

// WriteHeldPush records the held push (the zero value clears it).
func (b Book) WriteHeldPush(h Held) error { return b.writeHeldRecord(heldPushFile, h) }

func (b Book) writeHeldRecord(name string, h Held) error {
	p := b.path(name)
	if h.Remote == "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record %s: %w", name, err)
		}
		return nil
	}
	slices.Sort(h.Paths)
	data, _ := json.Marshal(h)
	return Write(p, data)
}

// UpdateLimits records files committed over their limit and drops the
// ones committed within it again.
func (b Book) UpdateLimits(over map[string]reminders.LimitOver, committed []string) error {
	rec := b.Limits()
	changed := false
	for _, p := range committed {
		if l, ok := over[p]; ok {
			rec[p], changed = l, true
		} else if _, ok := rec[p]; ok {
			delete(rec, p)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	p := b.path(limitsFile)
	if len(rec) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record limits: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(rec)
	return Write(p, data)
}

func (b Book) Limits() map[string]reminders.LimitOver {
	rec := map[string]reminders.LimitOver{}
	if data, err := os.ReadFile(b.path(limitsFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

// UpdateFrontMatterHeld adds newly held paths to the record and drops the
// ones committed or deleted since.
func (b Book) UpdateFrontMatterHeld(held map[string]bool, committed []string) error {
	rec := b.FrontMatterHeld()
	next := rec[:0:0]
	for _, p := range rec {
		if !held[p] && !slices.Contains(committed, p) && b.Exists(p) {
			next = append(next, p)
		}
	}
	for p := range held {
		next = append(next, p)
	}
	slices.Sort(next)
	next = slices.Compact(next)
	if slices.Equal(next, rec) {
		return nil
	}
	p := b.path(frontMatterHeldFile)
	if len(next) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record held front matter: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(next)
	if err := Write(p, data); err != nil {
		return fmt.Errorf("record held front matter: %w", err)
	}
	return nil
}

func (b Book) FrontMatterHeld() []string {
	var rec []string
	if data, err := os.ReadFile(b.path(frontMatterHeldFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	slices.Sort(rec)
	return rec
}

func (b Book) Skipped() map[string]string {
	rec := map[string]string{}
	if data, err := os.ReadFile(b.path(pathSkippedFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

func (b Book) WriteSkipped(rec map[string]string) error {
	p := b.path(pathSkippedFile)
	if len(rec) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record skipped paths: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(rec)
	if err := Write(p, data); err != nil {
		return fmt.Errorf("record skipped paths: %w", err)
	}
	return nil
}

// SecretHolds is the secret-held record narrowed to what still holds: the
// file is there (read) and still matches a pattern (match names the one
// that matches now). A cleaned or deleted file drops out. Sorted by path.
func (b Book) SecretHolds(read func(rel string) ([]byte, bool), match func(data string) (string, bool)) []reminders.SecretHold {
	rec := b.Secrets()
	if len(rec) == 0 {
		return nil
	}
	var out []reminders.SecretHold
	for p := range rec {
		data, ok := read(p)
		if !ok {
			continue // deleted: no longer held
		}
		name, ok := match(string(data))
		if !ok {
			continue // clean now: committed by the next flush, which clears it
		}
		out = append(out, reminders.SecretHold{Path: p, Pattern: name})
	}
	slices.SortFunc(out, func(x, y reminders.SecretHold) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// LimitsOver is the limit record narrowed to files still over the limit
// recorded for them (size is a file's body length). Sorted by path.
func (b Book) LimitsOver(read func(rel string) ([]byte, bool), size func(data []byte) int) []reminders.LimitOver {
	var out []reminders.LimitOver
	for p, l := range b.Limits() {
		data, ok := read(p)
		if !ok {
			continue
		}
		if n := size(data); n > l.Limit {
			out = append(out, reminders.LimitOver{Path: p, Limit: l.Limit, Size: n})
		}
	}
	slices.SortFunc(out, func(x, y reminders.LimitOver) int { return strings.Compare(x.Path, y.Path) })
	return out
}
