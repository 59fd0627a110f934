package agent

import (
	"errors"

	"github.com/memfsd/memfsd/blocks"
)

// updateFrontMatterHeld adds newly held paths to the record and drops the
// ones committed or deleted since.
func (a *Agent) updateFrontMatterHeld(held map[string]bool, committed []string) error {
	return a.recordBook().UpdateFrontMatterHeld(held, committed)
}

func (a *Agent) readFrontMatterHeld() []string { return a.recordBook().FrontMatterHeld() }

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
