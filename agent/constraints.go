package agent

import (
	"bytes"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/treecheck"
)

// letta-code's MemFS tree constraints on every route: the tool's commit
// guard, the direct writes' guard, the outgoing check (a shell's git
// commit) and a shared unit's proposals. Package treecheck keeps the
// checks for one tree and judges a change (Agent.treeChecks).

// treeGuard judges a commit's changed paths (those verdicts accept) by
// letta-code's tree rules: nil when they are off.
func (a *Agent) treeGuard(b *gitmem.Batch, verdicts []gitmem.Verdict, together bool) (map[int]*blocks.TreeConstraintsError, error) {
	if a.cfg.NoFrontMatterRules {
		return nil, nil
	}
	return a.treeChecks.JudgeBatch(b, verdicts, together)
}

// updateConstraintsHeld adds newly held paths (path → why) to the record
// and, with prune, drops the ones committed or undone since (prune reads
// HEAD: never under the repository's lock, as the outgoing check runs).
// The record is records.Book's; heldMu orders its updates.
func (a *Agent) updateConstraintsHeld(held map[string][]string, committed []string, prune bool) error {
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	return a.recordBook().UpdateConstraintsHeld(held, committed, prune, a.differsFromHead)
}

// differsFromHead reports whether the folder's rel is not HEAD's (a held
// write or deletion is still there).
func (a *Agent) differsFromHead(rel string) bool {
	repo := a.repository()
	if repo == nil {
		return false
	}
	head, inHead, err := repo.HeadFile(rel)
	if err != nil {
		return true
	}
	work, ok := a.workRead(rel)
	return inHead != ok || !bytes.Equal(head, work)
}

// withTreeGuard runs guard, then letta-code's tree rules over the paths
// it accepts: one that makes the tree worse is held, named in held with
// the problems it adds (each path is a commit of its own: judged in
// order, each on top of those accepted before it).
func (a *Agent) withTreeGuard(guard gitmem.Guard, held map[string][]string) gitmem.Guard {
	return func(b *gitmem.Batch) ([]gitmem.Verdict, error) {
		verdicts, err := guard(b)
		if err != nil {
			return verdicts, err
		}
		bad, err := a.treeGuard(b, verdicts, false)
		if err != nil {
			return nil, err
		}
		for i, e := range bad {
			verdicts[i] = gitmem.Hold
			held[b.Views[i].Path] = treecheck.ProblemTexts(e.Worse)
		}
		return verdicts, nil
	}
}

// outgoingTreeGuard judges a push's range by letta-code's tree rules: the
// files that make it worse, with the problems each adds.
func (a *Agent) outgoingTreeGuard(files []gitmem.OutgoingFile, remote gitmem.OutgoingRemote, plan gitmem.OutgoingPlan) (map[string][]string, error) {
	if a.cfg.NoFrontMatterRules {
		return nil, nil
	}
	return a.treeChecks.JudgeOutgoing(files, remote, plan)
}

// constraintsHeldList is the record narrowed to changes still in the
// folder and not committed, for status, sorted by path.
func (a *Agent) constraintsHeldList() []reminders.ConstraintsHold {
	return a.recordBook().ConstraintsHolds(a.differsFromHead)
}

// proposalTreeGuard judges a proposal's files (path → content, nil
// deletes) on the shared branch's remote tip by letta-code's tree rules
// (treecheck.Checks.JudgeProposal). nil when the rules are off.
func (a *Agent) proposalTreeGuard(repo *gitmem.Repo, files map[string][]byte, together bool) (map[string]*blocks.TreeConstraintsError, error) {
	if a.cfg.NoFrontMatterRules {
		return nil, nil
	}
	return a.treeChecks.JudgeProposal(repo, files, together, ProposalBase)
}
