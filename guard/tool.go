// Package guard is what may be committed: the judgements (gitmem.Guard)
// of a memory-tool commit and of direct writes into the folder (read-only
// blocks, front matter, credentials, limits, odd input, mass deletions).
// The agent's pipeline runs them; they hold no state of their own.
package guard

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
)

// Tool refuses a memory-tool commit that changes what is read-only in
// HEAD (or read_only in any front matter): the tool undoes its write and
// answers the read-only error.
func Tool(b *gitmem.Batch, patterns []memtool.SecretPattern, rules func(string) bool) ([]gitmem.Verdict, error) {
	for _, v := range b.Views {
		if v.Data != nil {
			if name, ok := memtool.SecretIn(patterns, string(v.Data)); ok {
				return nil, fmt.Errorf("refused: %s looks like it holds a credential (%s)", v.Path, name)
			}
		}
		if refused, err := AgainstHead(v, rules); err != nil || refused != nil {
			if refused != nil {
				return nil, &blocks.RefusedError{Path: v.Path, Err: refused}
			}
			return nil, err
		}
	}
	return make([]gitmem.Verdict, len(b.Views)), nil
}

// AgainstHead judges an agent's change of one path against HEAD's
// version, bytes and mode (blocks.CheckAgentChange), and, when rules is
// set (it says whether a path is in the folder), against letta-code's
// front-matter rules: refused is why it may not be made.
func AgainstHead(v gitmem.PathView, rules func(string) bool) (refused, err error) {
	if !blocks.MayBeReadOnly(v.Path) { // letta-code's rules too are for .md files only
		return nil, nil
	}
	old, err := v.Head()
	if err != nil {
		return nil, err
	}
	work := v.Data
	if v.Kind != gitmem.ChangeDelete && work == nil {
		work = []byte{}
	}
	if refused := blocks.CheckAgentChange(v.Path, old, uint32(v.HeadMode()), work, uint32(v.Mode)); refused != nil {
		return refused, nil
	}
	if v.Kind == gitmem.ChangeDelete {
		return nil, nil
	}
	return FrontMatterChange(v.Path, old, work, v.Mode == filemode.Symlink, rules), nil
}

// FrontMatterChange judges the front matter of work, replacing old
// at path (old: HEAD's version for a commit, the remote tip's for a push):
// letta-code's pre-commit hook when rules is set, then front matter that
// parsed in old must still parse (SPEC §8): else its limit, or a
// read_only, silently stops applying. nil: the change may be made.
func FrontMatterChange(path string, old, work []byte, isLink bool, rules func(string) bool) error {
	// letta-code's hook, on a regular file (a link is judged by the
	// read-only rules, not by its target's text).
	if rules != nil && !isLink {
		v2 := blocks.LettaV2(rules)
		if blocks.LettaRulesApply(path, v2, rules) {
			prev := old
			if v2 {
				prev = nil // the hook reads HEAD's version in v1 only
			}
			if refused := blocks.CheckLettaRules(path, work, prev, v2); refused != nil {
				return refused
			}
		}
	}
	return blocks.CheckFrontMatter(old, work)
}
