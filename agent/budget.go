package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/budget"
	"github.com/memfsd/memfsd/gitmem"
)

// budgetFile, among memfsd's records (outside the memory folder, so the
// agent cannot forge it), holds the operator's budget for the agent.
const budgetFile = "budget.json"

// Where a budget in force comes from (package budget).
const (
	BudgetFromDefault  = budget.FromDefault
	BudgetFromPolicy   = budget.FromPolicy
	BudgetFromOperator = budget.FromOperator
)

// Budget is the pinned memory's size against its token budget, at HEAD
// (budget.Status).
type Budget = budget.Status

// budgetLimit is the budget in force (budget.InForce): the operator's
// record, else the policy file's (policy is its content at HEAD, nil when
// absent), else budget.DefaultTokens.
func (a *Agent) budgetLimit(policy []byte) (int, string, string) {
	n, ok := a.readBudget()
	return budget.InForce(n, ok, policy)
}

// Budget measures HEAD's pinned memory against the budget in force.
func (a *Agent) Budget() (Budget, error) {
	repo := a.repository()
	if repo == nil {
		return Budget{}, ErrNotReady
	}
	_, tree, err := repo.HeadTreeFiles()
	if err != nil {
		return Budget{}, fmt.Errorf("budget %s: %w", a.ID, err)
	}
	files := make(map[string]budget.File, len(tree))
	for _, f := range tree {
		files[f.Path] = budget.File{Blob: f.Blob, Mode: f.Mode}
	}
	var policy []byte
	if f, ok := files[budget.PolicyPath]; ok {
		if policy, err = repo.Blob(f.Blob); err != nil {
			return Budget{}, fmt.Errorf("budget %s: %w", a.ID, err)
		}
	}
	b := Budget{Files: []budget.FileTokens{}}
	b.Limit, b.Source, b.Warning = a.budgetLimit(policy)
	if b.Tokens, b.Layout, b.Files, err = budget.Measure(files, repo.Blob); err != nil {
		return Budget{}, fmt.Errorf("budget %s: %w", a.ID, err)
	}
	if b.Files == nil {
		b.Files = []budget.FileTokens{}
	}
	return b, nil
}

// BudgetError is a memory-tool write refused for taking the pinned memory
// past its budget (budget.Error).
type BudgetError = budget.Error

// checkBudget refuses a tool write that takes the pinned memory past the
// budget, or further past it; one that shrinks it is let through, so an
// agent over its budget can always make room.
func (a *Agent) checkBudget(b *gitmem.Batch) error {
	tree, err := b.HeadFiles()
	if err != nil {
		return err
	}
	before := make(map[string]budget.File, len(tree))
	for _, f := range tree {
		before[f.Path] = budget.File{Blob: f.Blob, Mode: f.Mode}
	}
	after := make(map[string]budget.File, len(before)+len(b.Views))
	for p, f := range before {
		after[p] = f
	}
	for _, v := range b.Views {
		if v.Kind == gitmem.ChangeDelete {
			delete(after, v.Path)
			continue
		}
		data := v.Data
		if data == nil {
			data = []byte{}
		}
		after[v.Path] = budget.File{Data: data, Mode: filemode.Regular}
	}
	return budget.Check(before, after, b.Blob, func(policy []byte) int {
		limit, _, _ := a.budgetLimit(policy)
		return limit
	})
}

func (a *Agent) readBudget() (int, bool) {
	data, err := os.ReadFile(a.recordPath(budgetFile))
	if err != nil {
		return 0, false
	}
	return budget.ParseRecord(data)
}

// SetBudget is the operator's budget for the agent's pinned memory:
// tokens from 1 to budget.MaxTokens, or 0 to drop the setting (then the
// policy file's or the default applies). Kept in memfsd's records.
func (a *Agent) SetBudget(tokens int) error {
	p := a.recordPath(budgetFile)
	switch {
	case tokens == 0:
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("budget %s: %w", a.ID, err)
		}
		return nil
	case tokens < 0 || tokens > budget.MaxTokens:
		return fmt.Errorf("budget %s: %d tokens: want 1 to %d, or 0 to drop the setting", a.ID, tokens, budget.MaxTokens)
	}
	if err := writeRecord(p, budget.Record(tokens)); err != nil {
		return fmt.Errorf("budget %s: %w", a.ID, err)
	}
	return nil
}

// ReadBudget is Budget from disk, with no daemon.
func ReadBudget(cfg *Config, id string) (Budget, error) {
	var b Budget
	err := withDiskRepo(cfg, id, func(a *Agent) (err error) {
		b, err = a.Budget()
		return err
	})
	return b, err
}

// SetBudgetOnDisk is SetBudget with no daemon.
func SetBudgetOnDisk(cfg *Config, id string, tokens int) error {
	a, err := New(cfg, id)
	if err != nil {
		return err
	}
	return a.SetBudget(tokens)
}
