package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// SyncOptions adjust a sync.
type SyncOptions struct {
	// AcceptDeletes commits a mass deletion instead of holding it.
	AcceptDeletes bool
	// SkipScan skips looking for uncommitted files (the watcher already
	// committed them): only reconcile and push.
	SkipScan bool
}

// SyncResult says what a sync did.
type SyncResult struct {
	Pulled    bool // commits from elsewhere were brought in
	Committed int  // commits made from uncommitted files
	Pushed    int  // commits sent to the remote
	Head      plumbing.Hash
	Replayed  int      // local commits rebuilt on the remote tip
	Conflicts []string // conflict copies made (recovery)
	Backup    string   // backup ref made before a restore
	Held      []string // deletions held by the mass-delete guard
	Attempts  int      // sync attempts (retries + 1)
	LastClass retry.Class
}

// Sync clones on first use, commits every uncommitted file (one commit
// each, through the pipeline), then reconciles with the remote and pushes:
// fast-forward, replay with three-way merge, or restore after a history
// replacement (gitmem.Reconcile), with retryable failures retried under the
// backoff policy. A mass deletion is held unless opts.AcceptDeletes; the
// rest still syncs and the error is ErrMassDeleteHeld. Other errors are
// *retry.Error naming the operation. Every failed attempt is recorded at
// once (the agent is degraded while the retries go on); success clears it.
func (a *Agent) Sync(ctx context.Context, opts SyncOptions) (SyncResult, error) {
	var res SyncResult
	if err := a.ensureRepo(ctx); err != nil {
		a.recordErr(err, 1)
		return res, err
	}
	repo := a.repository()
	var held error
	if !opts.SkipScan {
		n, heldPaths, deleted, err := a.commitUncommitted(opts.AcceptDeletes)
		res.Committed, res.Held = n, heldPaths
		if err != nil {
			err = retry.Wrap("commit "+a.ID, err)
			a.recordErr(err, 1)
			return res, err
		}
		if opts.AcceptDeletes && len(deleted) > 0 {
			// The operator's decision covers pushing what was deleted.
			if err := a.approve(approvePushAccept, decisionKey(a.localTip(), deleted)); err != nil {
				return res, err
			}
		}
		if len(heldPaths) > 0 {
			held = fmt.Errorf("sync %s: %w: %d files deleted at once (run memfsd sync --agent %s --accept-deletes to commit the deletions, or restore the files)",
				a.ID, ErrMassDeleteHeld, len(heldPaths), a.ID)
		}
	}
	// A person's git operation waiting on its editor: a pull or replay
	// would move HEAD under it. The sync waits (persongit.go).
	pg := a.personGit(repo)
	// Index entries that differ from HEAD and nothing else may be another
	// memfsd's commit caught half-way (a one-shot sync beside the daemon
	// reads the index moved and HEAD not yet): a person's staging stays,
	// that clears in milliseconds. Looked at again for a moment first.
	for i := 0; i < 5 && pg != nil && pg.Holding && slices.Equal(pg.Signs, []string{"staged"}); i++ {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		pg = a.personGit(repo)
	}
	if pg != nil && pg.Holding {
		a.holdTurn()
		return res, fmt.Errorf("sync %s: %w (%s): memfsd's commits and syncs wait until it ends, at most until %s", a.ID, ErrPersonGitInProgress, strings.Join(pg.Signs, ", "), pg.Until.Format(time.RFC3339))
	}
	// The operator's block set the agent's history lost is committed
	// again: this sync pushes it (SPEC §13).
	n, err := a.reapplyOwedBlocks(repo)
	res.Committed += n
	if err != nil {
		err = retry.Wrap("sync "+a.ID, err)
		a.recordErr(err, 1)
		return res, err
	}
	var rr gitmem.ReconcileResult
	attempt := 0
	out, err := retry.Do(ctx, a.cfg.Retry, "sync "+a.ID, func(ctx context.Context) error {
		attempt++
		err := a.withFreshToken(func() (err error) {
			rr, err = repo.Reconcile(ctx)
			return err
		})
		if err != nil && !isHold(err) {
			a.recordErr(retry.Wrap("sync "+a.ID, err), attempt)
		}
		return err
	})
	res.Attempts, res.LastClass = out.Attempts, out.LastClass
	res.Pulled, res.Pushed, res.Head = rr.Pulled, rr.Pushed, rr.Head
	res.Replayed, res.Conflicts, res.Backup = rr.Replayed, rr.Conflicts, rr.Backup
	if res.Pulled && a.Hooks.Pulled != nil {
		a.Hooks.Pulled()
	}
	if errors.Is(err, gitmem.ErrPersonGitActive) {
		// A person's git was at work as the pull was to move HEAD: held
		// as for an operation in progress; the end of it kicks a sync.
		a.clearErr()
		a.holdTurn()
		return res, fmt.Errorf("sync %s: %w (%v): the pull waits until it ends", a.ID, ErrPersonGitInProgress, err)
	}
	if isHold(err) {
		// A hold, not a failure: the state says so (held_remote_deletes,
		// held_deletes).
		a.clearErr()
		// (err names the operation already: "sync <id>: <class>: ...".)
		return res, fmt.Errorf("%w (the operator runs memfsd sync --agent %s --accept-deletes to take the deletions, or --restore-deletes to keep the files)", err, a.ID)
	}
	if err != nil {
		a.log.Warn("sync failed", "class", string(retry.ClassOf(err)), "attempts", res.Attempts, "err", err)
		return res, err
	}
	// A remote emptied behind our back (unborn after the reconcile) gets
	// the default blocks again.
	if initialised, err := a.initialiseIfEmpty(repo); err != nil {
		a.recordErr(err, 1)
		return res, err
	} else if initialised {
		if err := a.withFreshToken(func() error { _, err := repo.Push(ctx); return err }); err != nil {
			err = retry.Wrap("push "+a.ID, err)
			a.recordErr(err, 1)
			return res, err
		}
	}
	if res.Pushed > 0 {
		a.rebaseBlockApprovals(repo)
	}
	_ = a.writeHeldRemote(heldRemote{}) // the remote's update is in (or there was none)
	_ = a.writeHeldPush(heldRemote{})   // and ours went out
	a.mu.Lock()
	if a.lastErr != nil {
		a.log.Info("sync recovered", "after_class", a.lastErr.Class)
	}
	a.lastErr = nil
	a.lastSync = time.Now()
	if res.Pushed > 0 {
		a.lastPush = time.Now()
	}
	a.mu.Unlock()
	if a.shared {
		a.pushPendingProposals(ctx)
		a.kickViews() // the views get what the sync brought
	}
	a.kickMirror() // the primary may have moved: the mirror follows, not in this turn
	// Backup refs older than 30 days go (the newest 10 stay): at start-up,
	// in a one-shot sync, and when this sync made one.
	if !opts.SkipScan || res.Backup != "" {
		if _, err := repo.PruneBackups(time.Now(), gitmem.DefaultBackupMaxAge, gitmem.DefaultBackupKeep); err != nil {
			a.log.Warn("pruning old backup refs failed", "err", err)
		}
	}
	return res, held
}

// commitUncommitted commits each dirty path through the pipeline.
func (a *Agent) commitUncommitted(acceptDeletes bool) (int, []string, []string, error) {
	sc, err := a.repository().ScanWork()
	if err != nil {
		return 0, nil, nil, err
	}
	a.noteSkipped(sc.Skipped, true)
	paths := make([]string, 0, len(sc.Dirty))
	for _, d := range sc.Dirty {
		paths = append(paths, d.Path)
	}
	out, err := a.commitDirect(paths, acceptDeletes, true)
	if a.Hooks.Committed != nil && out.Committed > 0 {
		a.Hooks.Committed(out.Committed)
	}
	return out.Committed, out.Held, out.Deleted, err
}

// isHold reports a sync stopped by a guard for the operator to decide: not
// a failure, and nothing to retry.
func isHold(err error) bool {
	return errors.Is(err, gitmem.ErrRemoteDeleteHeld) || errors.Is(err, gitmem.ErrPushHeld)
}
