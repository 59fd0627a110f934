package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/memfsd/memfsd/blocks"
)

// frontMatterHeldFile lists direct writes held uncommitted because they
// broke front matter that parsed at HEAD (SPEC §8): committed, the keys in
// it (limit, read_only) would silently stop applying.
const frontMatterHeldFile = "frontmatter-held.json"

// updateFrontMatterHeld adds newly held paths to the record and drops the
// ones committed or deleted since.
func (a *Agent) updateFrontMatterHeld(held map[string]bool, committed []string) error {
	rec := a.readFrontMatterHeld()
	next := rec[:0:0]
	for _, p := range rec {
		if !held[p] && !slices.Contains(committed, p) && a.workExists(p) {
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
	p := a.recordPath(frontMatterHeldFile)
	if len(next) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record held front matter: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(next)
	if err := writeRecord(p, data); err != nil {
		return fmt.Errorf("record held front matter: %w", err)
	}
	return nil
}

func (a *Agent) readFrontMatterHeld() []string {
	var rec []string
	if data, err := os.ReadFile(a.recordPath(frontMatterHeldFile)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	slices.Sort(rec)
	return rec
}

// frontMatterHeld is the record narrowed to files still present whose
// front matter still does not parse (a fixed one is committed by the next
// flush, which clears it).
func (a *Agent) frontMatterHeld() []string {
	var out []string
	for _, p := range a.readFrontMatterHeld() {
		if data, ok := a.workRead(p); ok && !blocks.FrontMatterParses(data) {
			out = append(out, p)
		}
	}
	return out
}
