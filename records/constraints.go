package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/memfsd/memfsd/reminders"
)

// constraintsHeldFile lists changes held uncommitted because they make the
// tree break letta-code's MemFS rules more: path → the problems added.
const constraintsHeldFile = "constraints-held.json"

// UpdateConstraintsHeld adds newly held paths (path → why) to the record
// of changes held for letta-code's tree rules and, with prune, drops the
// ones committed or undone since (stillHeld says whether the folder's
// path still differs from HEAD). The caller serialises the updates.
func (b Book) UpdateConstraintsHeld(held map[string][]string, committed []string, prune bool, stillHeld func(rel string) bool) error {
	rec := b.ConstraintsHeld()
	changed := false
	for p := range rec {
		if _, again := held[p]; again {
			continue
		}
		if slices.Contains(committed, p) || prune && !stillHeld(p) {
			delete(rec, p)
			changed = true
		}
	}
	for p, why := range held {
		if fmt.Sprint(rec[p]) != fmt.Sprint(why) {
			rec[p] = why
			changed = true
		}
	}
	if !changed {
		return nil
	}
	path := b.path(constraintsHeldFile)
	if len(rec) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record held letta-code limits: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(rec)
	if err := Write(path, data); err != nil {
		return fmt.Errorf("record held letta-code limits: %w", err)
	}
	return nil
}

// ConstraintsHeld reads the record of changes held for letta-code's tree
// rules: path → the problems each adds.
func (b Book) ConstraintsHeld() map[string][]string {
	rec := map[string][]string{}
	if data, err := os.ReadFile(b.path(constraintsHeldFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

// ConstraintsHolds is the record narrowed to what stillHeld says is still
// in the folder and not committed, as status shows it, sorted by path.
func (b Book) ConstraintsHolds(stillHeld func(rel string) bool) []reminders.ConstraintsHold {
	var out []reminders.ConstraintsHold
	for p, why := range b.ConstraintsHeld() {
		if stillHeld(p) {
			out = append(out, reminders.ConstraintsHold{Path: p, Problems: why})
		}
	}
	slices.SortFunc(out, func(x, y reminders.ConstraintsHold) int { return strings.Compare(x.Path, y.Path) })
	return out
}
