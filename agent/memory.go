package agent

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/guard"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/worktree"
)

// ErrNotReady is returned while the agent has no usable work tree yet.
var ErrNotReady = errors.New("memory is not available yet: the agent's first clone has not succeeded")

// MemoryTool is the memory tool over this agent's folder: each successful
// write is one commit, serialised with the pipeline's commits.
func (a *Agent) MemoryTool() (*memtool.Tool, error) { return a.memoryTool("") }

// memoryTool is MemoryTool whose commits carry trailer (when not empty) as
// a last line of their message.
func (a *Agent) memoryTool(trailer string) (*memtool.Tool, error) {
	return a.memoryToolAs(trailer, nil)
}

// memoryToolAs is memoryTool whose commits are by author (nil: the
// repository's own author).
func (a *Agent) memoryToolAs(trailer string, author *gitmem.Signature) (*memtool.Tool, error) {
	if a.repository() == nil {
		return nil, ErrNotReady
	}
	var secrets []memtool.SecretPattern
	if !a.cfg.NoSecretGuard {
		secrets = a.cfg.SecretPatterns
	}
	rules := a.frontMatterRules()
	return &memtool.Tool{
		Dir:     a.Dir(),
		Tree:    a.tree.Load(), // nil: the tool opens the folder per call
		Secrets: secrets,
		Mu:      &a.writeMu,
		// Syncs rewrite work files under writeMu too (WorkLock): a pull
		// never lands between the call's read and its write.
		BeforeWrite: a.beforeToolWrite,
		// The commit's syncfs hardens the tool's file writes too.
		CommitHardens: true,
		// The tool checks the files it reads; the commit checks again
		// against HEAD, under the pipeline's lock: a block the agent
		// unlocked on disk behind the tool's back is still read-only.
		Commit: func(paths []string, message string) (string, error) {
			// Under writeMu: the repository as it is now (a rebuild of
			// the .git swaps it under writeMu).
			repo := a.repository()
			if repo == nil {
				return "", ErrNotReady
			}
			if trailer != "" {
				message = strings.TrimRight(message, "\n") + "\n\n" + trailer
			}
			guard := func(b *gitmem.Batch) ([]gitmem.Verdict, error) {
				verdicts, err := guard.Tool(b, secrets, rules)
				if err == nil {
					// letta-code's tree rules, on the whole tree after
					// the command: all of its files or none.
					var held map[int]*blocks.TreeConstraintsError
					if held, err = a.treeGuard(b, nil, true); err == nil {
						for i := range b.Views {
							if e := held[i]; e != nil {
								return nil, &blocks.RefusedError{Path: b.Views[i].Path, Err: e}
							}
						}
					}
				}
				if err == nil {
					err = a.checkBudget(b) // under the same lock: nothing slips in between
				}
				var over *BudgetError
				if errors.As(err, &over) {
					err = &memtool.Refusal{Text: over.Error()}
				}
				return verdicts, err
			}
			// A person's git operation in the folder: the files are
			// written, the commit waits for it and lands on top of the
			// person's (persongit.go). Under writeMu, as every commit.
			// The tool's checks answer now all the same (a write they
			// refuse is undone), unless git holds index.lock (a commit
			// -a or with paths): then the deferred commit judges it as a
			// direct write, held with a reminder. Behind tool commits
			// already deferred, a call waits its turn (call order).
			if pg := a.personGit(repo); pg != nil && pg.Holding || a.pg.HasDeferred() {
				if pg == nil || !slices.Contains(pg.Signs, "index.lock") {
					_, err := repo.Commit(gitmem.CommitRequest{Paths: paths, One: true, Guard: func(b *gitmem.Batch) ([]gitmem.Verdict, error) {
						if _, err := guard(b); err != nil {
							return nil, err
						}
						return nil, errChecksOnly
					}})
					if err != nil && !errors.Is(err, errChecksOnly) && !errors.Is(err, gitstore.ErrLocked) {
						return "", err
					}
				}
				a.deferCommit(paths, message, author)
				return "", repo.SyncFiles()
			}
			req := gitmem.CommitRequest{
				Paths:   paths,
				One:     true,
				Author:  author,
				Message: func(gitmem.PathView) string { return message },
				Guard:   guard,
			}
			// The folder's git at work moments ago (a person's command,
			// the next one may follow): Commit waits for the quiet,
			// briefly, so the call answers with its commit.
			res, err := repo.Commit(req)
			a.repackSoon(repo)
			if errors.Is(err, gitmem.ErrPersonGitActive) {
				// A person's git began while the commit was built: the
				// checks have answered, the commit waits as above.
				a.deferCommit(paths, message, author)
				return "", repo.SyncFiles()
			}
			if err != nil {
				return "", err
			}
			if len(res.Commits) == 0 {
				return "", repo.SyncFiles() // nothing to commit: harden the write itself
			}
			return res.Commits[len(res.Commits)-1].String(), nil
		},
	}, nil
}

// errChecksOnly stops a commit once its guard has passed: the tool's
// checks of a write whose commit waits on a person's git operation.
var errChecksOnly = errors.New("checked, not committed")

// SetBlock is the operator's way to change a read-only block: it writes
// content to the block and commits it (the push follows at the next sync).
// Content without front matter keeps HEAD's (SPEC §8): it becomes the body.
func (a *Agent) SetBlock(name string, content []byte) (string, error) {
	var rel string
	switch name {
	case "persona":
		rel = blocks.PersonaPath
	case "human":
		rel = blocks.HumanPath
	default:
		return "", fmt.Errorf("block set: %q is not a block: want persona or human", name)
	}
	repo := a.repository()
	if repo == nil {
		return "", fmt.Errorf("block set %s: %w", name, ErrNotReady)
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if repo = a.repository(); repo == nil { // a rebuild of the .git swaps it under writeMu
		return "", fmt.Errorf("block set %s: %w", name, ErrNotReady)
	}
	if pg := a.personGit(repo); pg != nil && pg.Holding {
		return "", fmt.Errorf("block set %s: %w (%s): run it again when that ends", name, ErrPersonGitInProgress, strings.Join(pg.Signs, ", "))
	}
	head, err := a.operatorVersion(repo, rel)
	if err != nil {
		return "", fmt.Errorf("block set %s: read HEAD's version for its front matter: %w", name, err)
	}
	// What the change replaces: an approval made before the remote's tip
	// is known is bound to the first tip that still has it.
	var prev plumbing.Hash
	if cur, ok, err := repo.HeadFile(rel); err != nil {
		return "", fmt.Errorf("block set %s: read HEAD's version: %w", name, err)
	} else if ok {
		prev = plumbing.ComputeHash(plumbing.BlobObject, cur)
	}
	content, kept := blocks.KeepFrontMatter(head, content)
	if kept {
		a.log.Info("block set without front matter: HEAD's front matter kept", "path", rel)
	}
	// Through the held-open folder: a system/ the agent swapped for a link
	// is refused, never written through.
	err = a.withTree(func(wt *worktree.Dir) error {
		_, err := wt.WriteFile(rel, content, worktree.Regular, !a.cfg.NoFsync)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("block set %s: %w (if the agent put a link on the way, remove it and set the block again)", name, err)
	}
	// Recorded before the commit: a push racing it must already know. The
	// approval is bound to the remote tip this change is made against.
	base, err := repo.RemoteHead()
	if err != nil {
		return "", fmt.Errorf("block set %s: read the remote tip: %w", name, err)
	}
	if err := a.approveBlock(rel, content, base, prev); err != nil {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	_, err = repo.CommitOperator([]string{rel}, "memfsd: operator set "+rel)
	if err != nil && !errors.Is(err, gitmem.ErrNothingToCommit) {
		return "", fmt.Errorf("block set %s: %w", name, err)
	}
	return rel, nil
}

// operatorVersion is HEAD's version of the read-only block rel as far as
// it is the operator's: HEAD's when the remote has it too or it is the
// operator's own block set not pushed yet; else (the agent's shell
// committed its own version, which the next push puts back) the remote's.
// block set keeps its front matter, and must not keep the agent's.
func (a *Agent) operatorVersion(repo *gitmem.Repo, rel string) ([]byte, error) {
	head, _, err := repo.HeadFile(rel)
	if err != nil {
		return nil, err
	}
	remote, inRemote, err := repo.RemoteFile(rel)
	if err != nil || !inRemote || bytes.Equal(head, remote) {
		return head, err
	}
	id := plumbing.ComputeHash(plumbing.BlobObject, head).String()
	if a.blockSets.Approved(a.blocksPath(), rel, id) {
		return head, nil
	}
	return remote, nil
}

// frontMatterRules is what guard.AgainstHead takes to apply letta-code's
// front-matter rules (whether a path is in the folder), nil when they are
// off (--no-frontmatter-rules).
func (a *Agent) frontMatterRules() func(string) bool {
	if a.cfg.NoFrontMatterRules {
		return nil
	}
	return a.workExists
}
