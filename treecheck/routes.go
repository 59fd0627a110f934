package treecheck

import (
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/history"
)

// The routes a change reaches the checks by: a commit's batch, a push's
// range, a shared unit's proposal.

// JudgeBatch judges a commit's changed paths (those verdicts accept;
// nil: all), by index in b.Views.
func (c *Checks) JudgeBatch(b *gitmem.Batch, verdicts []gitmem.Verdict, together bool) (map[int]*blocks.TreeConstraintsError, error) {
	rd, base, err := b.Trees()
	if err != nil {
		return nil, err
	}
	var edits []Edit
	var index []int
	for i, v := range b.Views {
		if verdicts != nil && verdicts[i] != gitmem.Accept {
			continue
		}
		if v.Path != blocks.ConstraintsConfigPath && !strings.HasSuffix(v.Path, ".md") {
			continue
		}
		data := v.Data
		if v.Kind != gitmem.ChangeDelete && data == nil {
			data = []byte{}
		}
		edits = append(edits, Edit{Path: v.Path, Data: data, Mode: v.Mode})
		index = append(index, i)
	}
	if len(edits) == 0 {
		return nil, nil
	}
	held, err := c.Judge(rd, base, edits, together)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	out := map[int]*blocks.TreeConstraintsError{}
	for i, e := range held {
		out[index[i]] = e
	}
	return out, nil
}

// JudgeOutgoing judges a push's range (the remote's tree, then the
// range's files in order): the files that make it worse, with the
// problems each adds. Files already put back or held back are left out.
func (c *Checks) JudgeOutgoing(files []gitmem.OutgoingFile, remote gitmem.OutgoingRemote, plan gitmem.OutgoingPlan) (map[string][]string, error) {
	var edits []Edit
	for _, f := range files {
		if f.Path != blocks.ConstraintsConfigPath && !strings.HasSuffix(f.Path, ".md") {
			continue
		}
		if slices.Contains(plan.ReadOnly, f.Path) || slices.Contains(plan.HoldBack, f.Path) {
			continue
		}
		e := Edit{Path: f.Path}
		if f.InLocal {
			data, err := f.Local()
			if err != nil {
				return nil, err
			}
			if data == nil {
				data = []byte{}
			}
			e.Data, e.Mode = data, f.LocalMode()
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return nil, nil
	}
	rd, base := remote.Trees()
	held, err := c.Judge(rd, base, edits, false)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	out := map[string][]string{}
	for i, e := range held {
		out[edits[i].Path] = ProblemTexts(e.Worse)
	}
	return out, nil
}

// JudgeProposal judges a proposal's files (path → content, nil deletes)
// on the tree it goes on (base: the shared branch's remote tip, the tree
// an operator merges it into): the files that make it worse, with why
// (together: all of them when the whole change does).
func (c *Checks) JudgeProposal(repo *gitmem.Repo, files map[string][]byte, together bool, base func(*gitmem.Repo) (plumbing.Hash, error)) (map[string]*blocks.TreeConstraintsError, error) {
	var edits []Edit
	for p, data := range files {
		if p != blocks.ConstraintsConfigPath && !strings.HasSuffix(p, ".md") {
			continue
		}
		e := Edit{Path: p}
		if data != nil {
			e.Data, e.Mode = data, filemode.Regular
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return nil, nil
	}
	slices.SortFunc(edits, func(x, y Edit) int { return strings.Compare(x.Path, y.Path) })
	tip, err := base(repo) // the tree the proposal goes on
	if err != nil {
		return nil, err
	}
	var held map[int]*blocks.TreeConstraintsError
	err = repo.WithTreesAt(tip, func(rd history.TreeReader, tree plumbing.Hash) error {
		var err error
		held, err = c.Judge(rd, tree, edits, together)
		return err
	})
	if err != nil || len(held) == 0 {
		return nil, err
	}
	out := map[string]*blocks.TreeConstraintsError{}
	for i, e := range held {
		out[edits[i].Path] = e
	}
	return out, nil
}

// ProblemTexts are the problems' texts.
func ProblemTexts(ps []blocks.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Text
	}
	return out
}
