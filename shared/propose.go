package shared

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/retry"
	"github.com/memfsd/memfsd/worktree"
)

// Proposal is an agent's change to a shared repository under write:
// propose: one commit on the branch proposals/<agent>/<stamp>, on top of
// the shared branch's remote tip, pushed to the shared remote for an
// operator to merge with plain git. It never reaches the shared branch
// through memfsd.
type Proposal struct {
	Branch string    `json:"branch"`
	Commit string    `json:"commit"`
	Agent  string    `json:"agent"`
	Paths  []string  `json:"paths"`
	At     time.Time `json:"at"`
	Pushed bool      `json:"pushed"`
	// Failed counts this proposal's failed pushes in a row (a failed one
	// waits behind the others: see pushPendingProposals).
	Failed int `json:"failed,omitempty"`
}

// proposalsFile lists the unit's proposals (newest last).
const proposalsFile = "proposals.json"

// proposalsKept bounds the pushed proposals listed (the branches stay);
// a proposal not pushed yet is never dropped from the record.
const proposalsKept = 200

// proposeCall runs agent by's write on the shared clone as a proposal:
// the tool writes and checks as usual (paths, secrets, read-only blocks,
// front matter: the same checks, refused the same way), then, under the
// pipeline's lock, the written bytes are taken out of the clone (HEAD's
// versions put back: the shared branch never sees them) and committed as
// a proposal; the push runs after, without the lock.
func (a *Unit) proposeCall(in memtool.Call, by string) (memtool.Result, error) {
	repo := a.repository()
	if repo == nil {
		return memtool.Result{}, agent.ErrNotReady
	}
	secrets := a.secretPatterns()
	rules := a.frontMatterRules()
	var prop Proposal
	tool := &memtool.Tool{
		Dir:     a.Dir(),
		Tree:    a.WorkTree(),
		Secrets: secrets,
		Mu:      a.writeMu,
		Commit: func(paths []string, message string) (string, error) {
			files := map[string][]byte{}
			heads := map[string][]byte{}
			for _, p := range paths {
				head, inHead, err := repo.HeadFile(p)
				if err != nil {
					return "", err
				}
				data, ok := a.workRead(p)
				if ok && data == nil {
					data = []byte{}
				}
				if err := a.checkProposed(p, head, inHead, data, ok, secrets, rules); err != nil {
					return "", err
				}
				if ok {
					files[p] = data
				} else {
					files[p] = nil
				}
				if inHead {
					heads[p] = head
				}
			}
			// letta-code's tree rules on the tree the proposal is merged
			// into (letta-code agents may share it): all of the call's
			// files or none, as the tool's own commits.
			held, err := a.proposalTreeGuard(repo, files, true)
			if err != nil {
				return "", err
			}
			for _, p := range paths {
				if e := held[p]; e != nil {
					return "", &blocks.RefusedError{Path: p, Err: e}
				}
			}
			// The shared clone goes back to HEAD: the change lives on the
			// proposal's branch only.
			err = a.withTree(func(wt *worktree.Dir) error {
				for p := range files {
					if head, ok := heads[p]; ok {
						if _, err := wt.WriteFile(p, head, worktree.Regular, !a.cfg.NoFsync); err != nil {
							return err
						}
					} else if err := wt.Remove(p); err != nil && !os.IsNotExist(err) {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return "", fmt.Errorf("propose: put the shared clone back: %w", err)
			}
			if prop, err = a.commitProposal(repo, by, files, message); err != nil {
				return "", err
			}
			return prop.Commit, nil
		},
	}
	res := tool.RunCall(in)
	if res.IsError || prop.Branch == "" {
		return res, nil
	}
	err := a.pushProposal(a.Lifetime(), &prop)
	if rerr := a.recordProposal(prop); rerr != nil && err == nil {
		err = rerr
	}
	res.Content = strings.TrimRight(res.Content, "\n") + fmt.Sprintf(
		"\n\nThis change is a proposal: it is on branch %s of shared repository %s, not in the shared memory; an operator reviews and merges it.", prop.Branch, a.ID)
	if err != nil {
		res.Content += " Its push failed for now (" + string(retry.ClassOf(err)) + "); memfsd pushes it at the next turn."
	}
	return res, nil
}

// checkProposed judges a proposed version of p (present false: a
// deletion) against HEAD's (inHead false: none) as any write is judged:
// credentials, read-only blocks, front matter.
func (a *Unit) checkProposed(p string, head []byte, inHead bool, data []byte, present bool, secrets []memtool.SecretPattern, rules func(string) bool) error {
	if present {
		if name, found := memtool.SecretIn(secrets, string(data)); found {
			return fmt.Errorf("refused: %s looks like it holds a credential (%s)", p, name)
		}
	}
	var headMode, mode uint32
	if inHead {
		headMode = uint32(filemode.Regular)
	} else {
		head = nil
	}
	if present {
		mode = uint32(filemode.Regular)
	}
	if refused := blocks.CheckAgentChange(p, head, headMode, data, mode); refused != nil {
		return &blocks.RefusedError{Path: p, Err: refused}
	}
	if rules != nil && present && blocks.MayBeReadOnly(p) {
		if refused := blocks.CheckFrontMatter(head, data); refused != nil {
			return &blocks.RefusedError{Path: p, Err: refused}
		}
	}
	return nil
}

// commitProposal commits files (path → content, nil deletes) by agent by
// on top of the shared branch's remote tip (proposalBase), on a new branch
// proposals/<by>/<UTC stamp>-<ns>; the push is the caller's.
func (a *Unit) commitProposal(repo *gitmem.Repo, by string, files map[string][]byte, message string) (Proposal, error) {
	base, err := agent.ProposalBase(repo)
	if err != nil {
		return Proposal{}, fmt.Errorf("propose: %w", err)
	}
	now := time.Now().UTC()
	branch := fmt.Sprintf("proposals/%s/%s-%09d", by, now.Format("20060102T150405Z"), now.Nanosecond())
	h, err := repo.CommitOnto("refs/heads/"+branch, base, files, message, a.cfg.Author(by))
	if err != nil {
		return Proposal{}, err
	}
	prop := Proposal{Branch: branch, Commit: h.String(), Agent: by, At: now}
	for p := range files {
		prop.Paths = append(prop.Paths, p)
	}
	slices.Sort(prop.Paths)
	return prop, nil
}

// pushProposal pushes a proposal's branch, in one attempt (a failed one
// is pushed again at the next sync).
func (a *Unit) pushProposal(ctx context.Context, p *Proposal) error {
	repo := a.repository()
	if repo == nil {
		return agent.ErrNotReady
	}
	// One attempt, bounded like any attempt: a proposal waits for the
	// next turn, never holds up this tool call or sync with backoff.
	t := a.cfg.Retry.AttemptTimeout
	if t <= 0 {
		t = retry.DefaultAttemptTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	err := repo.PushNewBranch(ctx, "refs/heads/"+p.Branch, plumbing.NewHash(p.Commit))
	if err != nil && strings.Contains(err.Error(), "already exists") {
		err = nil // pushed before, the answer lost
	}
	p.Pushed = err == nil
	if err == nil {
		p.Failed = 0
	} else {
		p.Failed++
		a.log.Warn("pushing a proposal failed; retried at the next turn", "branch", p.Branch, "class", string(retry.ClassOf(err)), "err", err)
	}
	return err
}

// pushPendingProposals pushes the proposals not pushed yet (each sync),
// one attempt each. A failed one goes to the back of the record, so the
// next sync starts with the others: one proposal that keeps failing holds
// up no other. A refusal of that one proposal (class permanent: a hook, a
// protected name) lets the others be tried at once; a remote that is
// unreachable or failing ends this sync's pushes, so it costs a turn one
// request, not one per proposal.
func (a *Unit) pushPendingProposals(ctx context.Context) {
	for _, p := range a.Proposals() {
		if p.Pushed {
			continue
		}
		err := a.pushProposal(ctx, &p)
		_ = a.recordProposal(p)
		if err != nil && retry.ClassOf(err) != retry.ClassPermanent {
			return
		}
	}
}

// Proposals lists the unit's proposals, oldest first.
func (a *Unit) Proposals() []Proposal {
	var out []Proposal
	if data, err := os.ReadFile(a.recordPath(proposalsFile)); err == nil {
		_ = json.Unmarshal(data, &out)
	}
	return out
}

// recordProposal adds or updates p in the unit's record.
func (a *Unit) recordProposal(p Proposal) error {
	a.skipMu.Lock()
	defer a.skipMu.Unlock()
	list := slices.DeleteFunc(a.Proposals(), func(x Proposal) bool { return x.Branch == p.Branch })
	list = append(list, p)
	// Trim only what is done: the oldest pushed proposals go; one not
	// pushed yet stays however many came after it.
	pushed := 0
	for _, x := range list {
		if x.Pushed {
			pushed++
		}
	}
	for ; pushed > proposalsKept; pushed-- {
		i := slices.IndexFunc(list, func(x Proposal) bool { return x.Pushed })
		list = slices.Delete(list, i, i+1)
	}
	data, _ := json.MarshalIndent(list, "", "  ")
	if err := agent.WriteRecord(a.recordPath(proposalsFile), data); err != nil {
		return fmt.Errorf("record proposal %s: %w", p.Branch, err)
	}
	return nil
}

// PendingProposals are agent by's proposals an operator has not merged:
// some path of the proposal differs between its commit and the shared
// branch (newest last, at most proposalsShown).
func (a *Unit) PendingProposals(by string) []Proposal {
	repo := a.repository()
	if repo == nil {
		return nil
	}
	var out []Proposal
	for _, p := range a.Proposals() {
		if p.Agent != by {
			continue
		}
		for _, path := range p.Paths {
			theirs, inHead, err := repo.HeadFile(path)
			mine, merr := repo.FileAt(path, p.Commit)
			if err != nil || (merr != nil && !errors.Is(merr, history.ErrNotInRevision)) {
				continue
			}
			if inHead != (merr == nil) || (inHead && !bytes.Equal(theirs, mine.Data)) {
				out = append(out, p)
				break
			}
		}
	}
	if len(out) > proposalsShown {
		out = out[len(out)-proposalsShown:]
	}
	return out
}

// proposalsShown bounds the pending proposals told and listed.
const proposalsShown = 20
