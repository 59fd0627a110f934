package gitmem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/ancestry"
	"github.com/memfsd/memfsd/backups"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/replay"
	"github.com/memfsd/memfsd/wire"
)

// Backup refs are package backups'; these names keep gitmem's API as it
// was for its callers.
const (
	// BackupRefPrefix names the refs that keep a local tip before a restore.
	BackupRefPrefix = backups.RefPrefix
	// DefaultBackupMaxAge is the age past which PruneBackups may remove a backup ref.
	DefaultBackupMaxAge = backups.DefaultMaxAge
	// DefaultBackupKeep is how many of the newest backup refs PruneBackups always keeps.
	DefaultBackupKeep = backups.DefaultKeep
)

// DefaultPushRounds bounds how often Reconcile fetches, integrates and
// pushes again when another writer keeps winning the race.
const DefaultPushRounds = 5

// ReconcileResult says what Reconcile did.
type ReconcileResult struct {
	Relation  Relation // how local stood against the remote at first
	Pulled    bool     // remote commits were brought in
	Replayed  int      // local commits rebuilt on the remote tip
	Conflicts []string // conflict copies made
	Backup    string   // backup ref made before a restore
	Pushed    int      // commits the remote accepted
	Head      plumbing.Hash
	// Restored are read-only paths the outgoing check put back.
	Restored []string
}

// Reconcile brings local and remote together and pushes, recovering on its
// own from the classes that allow it: behind → fast-forward; diverged →
// replay the local commits onto the remote tip with a three-way merge per
// file; unrelated (or the remote rewrote the commits we had pushed) →
// back up the local tip under refs/memfsd/backup/, take the remote, and
// re-apply every local file it lacks or has differently. New commits become
// reachable only by the final compare-and-swap of each ref, so a crash at
// any point leaves the old branch intact. The push is retried in a bounded
// loop when another writer wins again.
func (r *Repo) Reconcile(ctx context.Context) (ReconcileResult, error) {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	var res ReconcileResult
	// The common turn: we only added commits on top of what we last saw on
	// the remote. Push straight away (the push checks the remote tip and
	// swaps it atomically); fetch only when that is refused. Two requests
	// instead of four.
	if pr, ok, err := r.pushIfOnlyAhead(ctx); err != nil {
		return res, fmt.Errorf("push: %w", err)
	} else if ok {
		res.Relation, res.Pushed, res.Head, res.Restored = Ahead, pr.Commits, pr.Head, pr.Restored
		return res, nil
	}
	for round := 0; round < DefaultPushRounds; round++ {
		lastPushed, err := r.lockedRef(r.trackingRef())
		if err != nil {
			return res, err
		}
		remote, err := r.fetch(ctx)
		if err != nil {
			return res, fmt.Errorf("fetch: %w", err)
		}
		done, err := r.integrate(lastPushed, remote, round, &res)
		if errors.Is(err, gitstore.ErrRefMoved) {
			// A git command beside us moved the branch while we
			// integrated: integrate again from its new tip.
			r.log.Info("the branch moved during the sync; integrating again", "round", round+1)
			continue
		}
		if err != nil || done {
			return res, err
		}
		pr, err := r.push(ctx)
		res.Head = pr.Head
		res.Restored = append(res.Restored, pr.Restored...)
		if err == nil {
			res.Pushed += pr.Commits
			return res, nil
		}
		if !errors.Is(err, ErrNonFastForward) && !wire.IsRemoteRejection(err) {
			return res, fmt.Errorf("push: %w", err)
		}
		r.log.Info("another writer pushed first; integrating again", "round", round+1)
	}
	return res, fmt.Errorf("push: %w (still losing the race after %d rounds)", ErrNonFastForward, DefaultPushRounds)
}

// integrate is the local step of a round, under r.mu: relate the branch to
// the fetched remote tip, then fast-forward (done: nothing to push), or
// replay / restore and move the branch. Local commits wait for it; it costs
// the divergence, never the network.
func (r *Repo) integrate(lastPushed, remote plumbing.Hash, round int, res *ReconcileResult) (bool, error) {
	r.lockWork()
	defer r.unlockWork()
	local, err := r.Head()
	if err != nil {
		return false, err
	}
	rel, err := r.relate(local, remote)
	if err != nil {
		return false, err
	}
	if round == 0 {
		res.Relation = rel
	}
	if rel == Diverged && r.rewritten(lastPushed, remote) {
		rel = Unrelated
	}
	switch rel {
	case Behind:
		target, restored, err := r.checkIncoming(local, remote, remote)
		if err != nil {
			return false, err
		}
		if r.beforeMove != nil {
			r.beforeMove()
		}
		if err := r.moveBranch(local, target, "memfsd: pull: fast-forward"); err != nil {
			return false, fmt.Errorf("fast-forward: %w", err)
		}
		res.Pulled = true
		res.Head = target
		return !restored, nil // a restore commit on top is ours to push
	case Diverged, Unrelated:
		var rr replay.Result
		who := object.Signature{Name: r.opts.Author.Name, Email: r.opts.Author.Email}
		if rel == Diverged {
			if rr, err = replay.Replay(r.objs, local, remote, who); err == nil {
				rr.Head, _, err = r.checkIncoming(local, remote, rr.Head)
			}
		} else {
			if res.Backup, err = r.backup(local); err != nil {
				return false, err
			}
			r.log.Warn("remote history replaced; local tip backed up", "backup", res.Backup, "old_tip", local.String())
			rr, err = r.restore(local, remote, who)
		}
		if err != nil {
			return false, fmt.Errorf("replay: %w", err)
		}
		if r.beforeMove != nil {
			r.beforeMove()
		}
		if err := r.moveBranch(local, rr.Head, "memfsd: "+map[bool]string{true: "replay onto the remote", false: "restore after the remote history was replaced"}[rel == Diverged]); err != nil {
			return false, fmt.Errorf("replay: move %s: %w", r.opts.Branch, err)
		}
		res.Pulled = true
		res.Replayed += rr.Replayed
		res.Conflicts = append(res.Conflicts, rr.Conflicts...)
	}
	return false, nil
}

// restore is replay.Restore with local's and remote's files.
func (r *Repo) restore(local, remote plumbing.Hash, who object.Signature) (replay.Result, error) {
	mine := map[string]object.TreeEntry{}
	if err := r.flattenCommit(local, mine); err != nil {
		return replay.Result{Head: remote}, err
	}
	theirs := map[string]object.TreeEntry{}
	if err := r.flattenCommit(remote, theirs); err != nil {
		return replay.Result{Head: remote}, err
	}
	return replay.Restore(r.objs, local, remote, mine, theirs, who)
}

// lockedRef reads a ref under r.mu.
func (r *Repo) lockedRef(name string) (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.unlock()
	return gitstore.ReadRef(r.GitDir, name)
}

// pushIfOnlyAhead pushes when local only adds commits to the last known
// remote tip: in one request (pushDirect), or in two (advertisement, then
// the pack) when the server refuses the shortcut. ok false (and no error)
// means: integrate first, because the remote moved (the server's
// compare-and-swap refused our stale tip) or local is not simply ahead.
func (r *Repo) pushIfOnlyAhead(ctx context.Context) (PushResult, bool, error) {
	lastKnown, ahead, err := r.onlyAhead()
	if err != nil || !ahead {
		return PushResult{}, false, err
	}
	pr, err := r.pushDirect(ctx, lastKnown)
	var refused *wire.RefusedError
	switch {
	case err == nil:
		return pr, true, nil
	case errors.As(err, &refused):
		// The server refused the pack or the update: the pack was built
		// on a tip it no longer has (another writer won, or its history
		// was replaced and our old tip is gone from it). Whatever the
		// reason, nothing here is known about the remote any more: fetch
		// and integrate, then push against the tip it advertises.
		r.log.Info("the remote refused a push on the tip last seen there; fetching", "last_known", gitstore.Short(lastKnown), "err", err)
		return PushResult{}, false, nil
	case wire.ShortcutRefused(err):
		r.log.Debug("the server refused a push without the ref advertisement; pushing in two requests", "err", err)
		pr, err = r.push(ctx)
	}
	switch {
	case err == nil:
		return pr, true, nil
	case errors.Is(err, ErrNonFastForward), errors.Is(err, ErrUnrelatedHistory), wire.IsRemoteRejection(err), errors.As(err, &refused):
		// The two-request push found the remote moved on: integrate.
		return PushResult{}, false, nil
	}
	return pr, false, err
}

// onlyAhead reports whether the branch only adds commits to the last known
// remote tip.
func (r *Repo) onlyAhead() (plumbing.Hash, bool, error) {
	r.mu.Lock()
	defer r.unlock()
	lastPushed, err := r.RemoteHead()
	if err != nil || lastPushed.IsZero() {
		return lastPushed, false, err
	}
	local, err := r.Head()
	if err != nil || local == lastPushed {
		return lastPushed, false, err
	}
	rel, err := r.relate(local, lastPushed)
	return lastPushed, rel == Ahead, err
}

// rewritten reports whether the remote no longer holds the commit we last
// saw there: it was force-pushed to another history.
func (r *Repo) rewritten(lastPushed, remote plumbing.Hash) bool {
	if lastPushed.IsZero() || lastPushed == remote || !r.objs.Has(lastPushed) {
		return false
	}
	ok, err := ancestry.Reaches(r.objs, remote, lastPushed)
	return err == nil && !ok
}

// backups are the repository's backup refs.
func (r *Repo) backups() backups.Refs {
	return backups.Refs{GitDir: r.GitDir, LockWait: r.opts.LockWait, Spares: r.spares, Log: r.log}
}

// backup keeps tip under refs/memfsd/backup/<unix-seconds>.
func (r *Repo) backup(tip plumbing.Hash) (string, error) {
	return r.backups().Make(tip, r.objs.Sync, r.reflog("memfsd: backup before taking the remote's history"))
}

// Backups lists the backup refs.
func (r *Repo) Backups() ([]string, error) { return r.backups().List() }

// PruneBackups deletes backup refs older than maxAge, always keeping the
// newest keep of them, under the repository's lock (see backups.Refs.Prune
// for the rule); it returns the refs removed, oldest first.
func (r *Repo) PruneBackups(now time.Time, maxAge time.Duration, keep int) ([]string, error) {
	r.mu.Lock()
	defer r.unlock()
	return r.backups().Prune(now, maxAge, keep)
}
