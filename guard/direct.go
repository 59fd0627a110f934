package guard

import (
	"errors"
	"fmt"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
)

// MassDeleteMin is the fewest tracked files for the half rule to apply.
const MassDeleteMin = 20

// IsMassDelete reports whether deleting deleted of tracked files (with
// remaining files left) must be held for a person to confirm: more than
// half of at least MassDeleteMin, or every file.
func IsMassDelete(deleted, tracked, remaining int) bool {
	if deleted == 0 {
		return false
	}
	if remaining <= 0 && deleted >= tracked {
		return true // the whole folder vanished
	}
	return tracked >= MassDeleteMin && deleted*2 > tracked
}

// OddInput holds, before next sees them, direct writes that must not
// be committed as they are: a file over max bytes (it would fill the
// history and delay every file beside it) and a name with a control
// character or bytes that are not UTF-8 (it would split a commit subject,
// a listing or a prompt). Their bytes stay in the folder; each is named in
// problems with its cause.
func OddInput(max int64, problems map[string]reminders.WriteProblem, next gitmem.Guard) gitmem.Guard {
	return func(b *gitmem.Batch) ([]gitmem.Verdict, error) {
		var held []int
		rest := b.Views[:0:0]
		for i, v := range b.Views {
			switch {
			case v.Data != nil && reminders.BadName(v.Path):
				problems[v.Path] = reminders.WriteProblem{Path: v.Path, Cause: reminders.CauseBadName, Detail: "a control character or bytes that are not UTF-8 in the name"}
			case v.TooLarge > 0:
				problems[v.Path] = reminders.WriteProblem{Path: v.Path, Cause: reminders.CauseTooLarge, Detail: fmt.Sprintf("%d bytes, the cap is %d", v.TooLarge, max), Size: v.TooLarge, Limit: max}
			case v.Data != nil && int64(len(v.Data)) > max:
				problems[v.Path] = reminders.WriteProblem{Path: v.Path, Cause: reminders.CauseTooLarge, Detail: fmt.Sprintf("%d bytes, the cap is %d", len(v.Data), max), Size: int64(len(v.Data)), Limit: max}
			default:
				rest = append(rest, v)
				continue
			}
			held = append(held, i)
		}
		if len(held) == 0 {
			return next(b)
		}
		all := b.Views
		var verdicts []gitmem.Verdict
		if len(rest) > 0 {
			b.Views = rest
			var err error
			verdicts, err = next(b)
			b.Views = all
			if err != nil {
				return nil, err
			}
		}
		out := make([]gitmem.Verdict, 0, len(all))
		j := 0
		for i := range all {
			if len(held) > 0 && held[0] == i {
				out = append(out, gitmem.Hold)
				held = held[1:]
				continue
			}
			if j < len(verdicts) {
				out = append(out, verdicts[j])
			}
			j++
		}
		return out, nil
	}
}

// DirectWrite is the pipeline's judgement of direct writes: read-only
// blocks (and any change of read_only) are restored, text that looks like a
// credential is held uncommitted (named in secrets), so is a write that
// breaks front matter that parsed at HEAD or letta-code's front-matter
// rules (named in broken), a mass
// deletion held. While deletions are held (holding, the count still gone
// from the folder), every further deletion joins them: a mass deletion the
// watcher saw in two batches (a loaded machine, a slow rm) is held whole,
// not half pushed.
func DirectWrite(acceptDeletes bool, holding int, patterns []memtool.SecretPattern, rules func(string) bool, secrets map[string]string, limits map[string]reminders.LimitOver, broken map[string]bool) gitmem.Guard {
	return func(b *gitmem.Batch) ([]gitmem.Verdict, error) {
		verdicts := make([]gitmem.Verdict, len(b.Views))
		deletes, creates := 0, 0
		for i, v := range b.Views {
			if refused, err := AgainstHead(v, rules); err != nil {
				return nil, err
			} else if errors.Is(refused, blocks.ErrFrontMatterBroken) || errors.Is(refused, blocks.ErrFrontMatterRules) {
				// The agent's own file, its front matter broken: held with
				// a reminder until it parses again, not undone.
				verdicts[i] = gitmem.Hold
				broken[v.Path] = true
				continue
			} else if refused != nil {
				verdicts[i] = gitmem.Restore
				continue
			}
			if v.Data != nil {
				if name, ok := memtool.SecretIn(patterns, string(v.Data)); ok {
					verdicts[i] = gitmem.Hold
					secrets[v.Path] = name
					continue
				}
				// Over its limit: committed all the same (a direct write is
				// the agent's own), and the agent is told.
				old, err := v.Head()
				if err != nil {
					return nil, err
				}
				var over *blocks.LimitError
				if errors.As(blocks.CheckLimit(old, v.Data), &over) {
					limits[v.Path] = reminders.LimitOver{Path: v.Path, Limit: over.Limit, Size: over.Requested}
				}
			}
			switch v.Kind {
			case gitmem.ChangeDelete:
				deletes++
			case gitmem.ChangeCreate:
				creates++
			}
		}
		if deletes == 0 || acceptDeletes {
			return verdicts, nil
		}
		tracked, err := b.Tracked()
		if err != nil {
			return nil, err
		}
		if holding > 0 || IsMassDelete(deletes, tracked, tracked-deletes+creates) {
			for i, v := range b.Views {
				if v.Kind == gitmem.ChangeDelete && verdicts[i] == gitmem.Accept {
					verdicts[i] = gitmem.Hold
				}
			}
		}
		return verdicts, nil
	}
}
