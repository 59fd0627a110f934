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
// front matter still does not parse or still breaks letta-code's rules (a
// fixed one is committed by the next flush, which clears it), and for
// each the rule it breaks in letta-code's words ("" when it does not
// parse).
func (a *Agent) frontMatterHeld() (held, why []string) {
	for _, p := range a.readFrontMatterHeld() {
		data, ok := a.workRead(p)
		if !ok {
			continue
		}
		var rules *blocks.FrontMatterRulesError
		if errors.As(a.checkFrontMatterRules(p, data), &rules) {
			held, why = append(held, p), append(why, rules.Errors[0])
		} else if !blocks.FrontMatterParses(data) {
			held, why = append(held, p), append(why, "")
		}
	}
	return held, why
}

// checkFrontMatterRules is letta-code's front-matter rules for data at
// rel against HEAD's version (nil when they hold, do not apply, or are
// off).
func (a *Agent) checkFrontMatterRules(rel string, data []byte) error {
	exists := a.frontMatterRules()
	if exists == nil {
		return nil
	}
	v2 := blocks.LettaV2(exists)
	if !blocks.LettaRulesApply(rel, v2, exists) {
		return nil
	}
	var prev []byte
	if repo := a.repository(); repo != nil && !v2 {
		prev, _, _ = repo.HeadFile(rel)
	}
	return blocks.CheckLettaRules(rel, data, prev, v2)
}
