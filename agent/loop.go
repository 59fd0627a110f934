package agent

import (
	"errors"
	"slices"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// Changed records a write to rel (relative to the memory folder) and
// (re)arms the debounce: the commit loop commits it once it settles.
func (a *Agent) Changed(rel string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending) == 0 {
		a.firstSeen = time.Now()
	}
	a.pending[rel] = true
	a.lastSeen = time.Now()
	delay := a.Debounce
	// A file written without pause still gets committed: at most
	// maxDelay after the first event of a burst.
	if left := time.Until(a.firstSeen.Add(maxDelay)); left < delay {
		delay = max(left, 0)
	}
	if a.flushTimer != nil {
		a.flushTimer.Reset(delay)
	}
}

// Rescan asks the commit loop to look for every uncommitted path (after an
// inotify overflow, or when polling). Requests coalesce.
func (a *Agent) Rescan() {
	select {
	case a.rescanC <- struct{}{}:
	default:
	}
}

// SetPolling marks the agent as polled (the kernel refused watches).
func (a *Agent) SetPolling() {
	a.mu.Lock()
	a.polling = true
	a.mu.Unlock()
}

// Polling reports whether the agent is polled instead of watched.
func (a *Agent) Polling() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.polling
}

// commitLoop commits settled writes and runs rescans. It never waits on the
// network, so a silent remote does not hold up local commits.
func (a *Agent) commitLoop() {
	defer a.wg.Done()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.flushTimer.C:
			a.safely("commit", a.flushSettled)
		case <-a.rescanC:
			a.safely("rescan", a.rescan)
		}
	}
}

// flush commits each pending path through the pipeline (one commit per
// file); a path whose commit failed stays pending for the next flush.
func (a *Agent) flush() { a.flushPending(false) }

// flushSettled is flush at the debounce timer: a burst with deletions
// waits for deleteSettle of quiet first (a turn or shutdown does not).
func (a *Agent) flushSettled() { a.flushPending(true) }

func (a *Agent) flushPending(settle bool) {
	a.mu.Lock()
	paths := make([]string, 0, len(a.pending))
	for p := range a.pending {
		paths = append(paths, p)
	}
	left := a.deleteSettleLeft()
	a.mu.Unlock()
	if settle && left > 0 && slices.ContainsFunc(paths, func(p string) bool { return !a.workExists(p) }) {
		a.mu.Lock()
		a.flushTimer.Reset(left)
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	paths = paths[:0]
	for p := range a.pending {
		paths = append(paths, p)
	}
	clear(a.pending)
	a.mu.Unlock()
	if (len(paths) == 0 && !a.personGitWaiting()) || a.repository() == nil {
		return
	}
	slices.Sort(paths)
	out, err := a.commitDirect(paths, false, !settle)
	if out.Committed > 0 && a.Hooks.Committed != nil {
		a.Hooks.Committed(out.Committed)
	}
	again := out.Failed // failed on their own: the others are in
	if err != nil {
		a.log.Error("commit failed; kept for the next try", "paths", len(paths), "err", err)
		again = paths
	}
	if len(again) > 0 {
		a.mu.Lock()
		for _, p := range again {
			a.pending[p] = true
		}
		a.mu.Unlock()
		a.flushTimer.Reset(maxDelay)
	}
}

// deleteSettleLeft is how much longer a burst that deletes files waits
// for quiet before its commit (0: commit now). Under a.mu.
func (a *Agent) deleteSettleLeft() time.Duration {
	if a.flushTimer == nil {
		return 0
	}
	return max(min(time.Until(a.lastSeen.Add(deleteSettle)), time.Until(a.firstSeen.Add(maxDelay))), 0)
}

// rescan queues every path that differs from HEAD, except held deletions.
func (a *Agent) rescan() {
	repo := a.repository()
	if repo == nil {
		return
	}
	if a.ScanSlots != nil {
		select {
		case a.ScanSlots <- struct{}{}:
			defer func() { <-a.ScanSlots }()
		case <-a.ctx.Done():
			return
		}
	}
	sc, err := repo.ScanWork()
	if err != nil {
		a.log.Warn("scan failed", "err", err)
		return
	}
	a.noteSkipped(sc.Skipped, true)
	held := a.readHeld()
	for _, d := range sc.Dirty {
		if !slices.Contains(held, d.Path) {
			a.Changed(d.Path)
		}
	}
}

// syncLoop clones a never-cloned agent, runs the start-up sync, then a
// sync per turn (and per pull interval) until the agent is closed.
func (a *Agent) syncLoop() {
	defer a.wg.Done()
	a.safely("start-up sync", a.startup)
	var pull <-chan time.Time
	if a.PullInterval > 0 {
		t := time.NewTicker(a.PullInterval)
		defer t.Stop()
		pull = t.C
	}
	var cloneRetry <-chan time.Time
	// The background retry of a failed push (owedRetry): armed after
	// every sync that left commits owed, with backoff between rounds.
	rounds := a.cfg.Retry.Rounds()
	owed := time.NewTimer(time.Hour)
	owed.Stop()
	defer owed.Stop()
	for {
		if a.repository() == nil && cloneRetry == nil {
			cloneRetry = time.After(DefaultCloneRetry)
		}
		select {
		case <-a.ctx.Done():
			return
		case <-owed.C:
			// A sync, not a turn: writes still settling wait for their
			// debounce (the commit loop's), as between turns.
			a.safely("sync", func() { _, _ = a.Sync(a.ctx, SyncOptions{SkipScan: true}) })
		case <-a.kick:
			a.mu.Lock()
			a.started++
			gen := a.started
			a.mu.Unlock()
			var res TurnResult
			if !a.safely("sync", func() { res = a.turnOnce() }) {
				res = TurnResult{Outcome: OutcomeFailed, Error: "internal error (panic): see the agent's status", Status: a.Status(false)}
			}
			a.mu.Lock()
			a.finished, a.last = gen, res
			a.done.Broadcast()
			a.mu.Unlock()
		case <-pull:
			a.safely("sync", func() { a.turnOnce() })
		case <-cloneRetry:
			cloneRetry = nil
			a.safely("start-up sync", a.startup)
		}
		a.owedRetry(owed, rounds)
	}
}

// owedRetry arms the background retry of a failed push after a sync of
// the sync loop (its only caller: one owner per agent, so retries
// coalesce with turns): when the last sync failed for a class that a
// retry may cure (the server or network, another writer first) and
// commits, writes or an operator's block set are still owed, the next
// round runs after the backoff (rounds: the retry policy's waits, capped
// at its Max, never giving up); a success or a failure that waits on a
// person (auth, not_found, a hold: LastError's next step says which)
// resets it. Every route's push is owed alike: the MCP idle push, the
// API's turn, direct writes. Local reads only, no network, and a.mu is
// not held across them.
func (a *Agent) owedRetry(t *time.Timer, rounds *backoff.ExponentialBackOff) {
	a.mu.Lock()
	var class retry.Class
	if a.lastErr != nil {
		class = retry.Class(a.lastErr.Class)
	}
	writes := len(a.pending) > 0
	a.mu.Unlock()
	due := false
	switch class {
	case retry.ClassRetryable, retry.ClassNonFastForward, retry.ClassUnrelatedHistory:
		due = writes || a.Ahead() > 0 || len(a.blockSets.Pending(a.blocksPath())) > 0
	}
	if !due {
		t.Stop()
		rounds.Reset()
		a.mu.Lock()
		if a.retryTries > 0 && a.lastErr == nil {
			a.log.Info("background push retry: the owed commits are on the remote", "tries", a.retryTries)
		}
		a.retryAt, a.retryTries = time.Time{}, 0
		a.mu.Unlock()
		return
	}
	wait := rounds.NextBackOff()
	t.Reset(wait)
	a.mu.Lock()
	a.retryAt = time.Now().Add(wait)
	a.retryTries++
	tries := a.retryTries
	a.mu.Unlock()
	a.log.Info("push failed; retried in the background", "class", string(class), "in", wait.Round(time.Millisecond), "tries", tries)
}

// startup clones if needed and runs the first full sync (commit what a
// crash left, reconcile, push), within the daemon's start-up slots.
func (a *Agent) startup() {
	if a.StartSlots != nil {
		select {
		case a.StartSlots <- struct{}{}:
			defer func() { <-a.StartSlots }()
		case <-a.ctx.Done():
			return
		}
	}
	if _, err := a.Sync(a.ctx, SyncOptions{}); errors.Is(err, ErrPersonGitInProgress) {
		a.log.Info("start-up sync waits on a person's git operation in the folder", "err", err)
	} else if err != nil && !errors.Is(err, ErrMassDeleteHeld) {
		a.log.Warn("start-up sync failed; retried at the next turn", "class", string(retry.ClassOf(err)), "err", err)
	}
}

// Turn asks for a sync and waits, up to wait, for the first one that
// starts after now. Past wait (or when done is closed, e.g. the request
// went away) the answer is "delayed" and the sync goes on.
func (a *Agent) Turn(done <-chan struct{}, wait time.Duration) TurnResult {
	a.mu.Lock()
	target := a.started + 1
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default: // a sync is already due: it is ours too
	}
	deadline := time.Now().Add(wait)
	stop := make(chan struct{})
	defer close(stop)
	wake := func() {
		a.mu.Lock()
		a.done.Broadcast()
		a.mu.Unlock()
	}
	timer := time.AfterFunc(wait, wake)
	defer timer.Stop()
	if done != nil {
		go func() { // ends with Turn
			select {
			case <-done:
				wake()
			case <-stop:
			}
		}()
	}
	a.mu.Lock()
	for a.finished < target {
		if !time.Now().Before(deadline) || a.ctx.Err() != nil || isDone(done) {
			a.mu.Unlock()
			// The status as it stands (bounded: the running sync does
			// not hold it), never an object with every field empty.
			return TurnResult{Outcome: OutcomeDelayed, Error: "the sync is still running; it goes on in the background",
				NextStep: "nothing to do: the sync goes on in the background and pushes what is committed; memfsd status shows when it ended", Status: a.Status(false)}
		}
		a.done.Wait()
	}
	last := a.last
	a.mu.Unlock()
	return last
}

func isDone(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// turnOnce commits pending writes and syncs.
func (a *Agent) turnOnce() TurnResult {
	a.flush()
	a.settleRejections()
	start := time.Now()
	res, err := a.Sync(a.ctx, SyncOptions{SkipScan: true})
	out := outcomeOf(err, &res)
	if a.Hooks.Turned != nil {
		a.Hooks.Turned(out, time.Since(start))
	}
	tr := TurnResult{Outcome: out, Pushed: res.Pushed}
	if err != nil {
		tr.Error, tr.Class, tr.NextStep = err.Error(), string(retry.ClassOf(err)), retry.NextStep(err)
	}
	tr.Status = a.Status(false)
	if werr := WriteProblemsError(tr.Status.WriteProblems); werr != nil && err == nil {
		// A direct write that was not saved is not "pushed": the turn
		// says which file and why (the others were pushed, in Pushed).
		tr.Outcome, tr.Error = OutcomeFailed, werr.Error()
	}
	return tr
}

func outcomeOf(err error, res *SyncResult) string {
	switch {
	case errors.Is(err, ErrPersonGitInProgress):
		return OutcomeDelayed
	case err != nil && retry.ClassOf(err) == retry.ClassRetryable:
		return OutcomeDelayed
	case err != nil:
		return OutcomeFailed
	case len(res.Conflicts) > 0:
		return OutcomeConflict
	case res.Pushed > 0:
		return OutcomePushed
	}
	return OutcomeClean
}

// repackLoop packs loose objects (and rolls small packs up) whenever a
// commit finds enough of them written (repackSoon). It runs beside the
// commit and sync loops: a repack reads and writes local files only, holds
// the repo's lock for a re-read of the pack list and a few removals, and
// never waits on the network, so neither writes nor syncs queue behind it.
func (a *Agent) repackLoop() {
	defer a.wg.Done()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.repackC:
			a.safely("repack", a.repackOnce)
		}
	}
}

// repackOnce is one repack of the repack loop.
func (a *Agent) repackOnce() {
	repo := a.repository()
	if repo == nil {
		return
	}
	if _, err := repo.Repack(a.ctx, gitmem.DefaultRepackLoose); err != nil && !errors.Is(err, gitmem.ErrGCRunning) && !errors.Is(err, gitmem.ErrPacksChanged) && a.ctx.Err() == nil {
		a.log.Warn("repack failed; the objects stay as they are (loose objects are as safe as packed ones)", "err", err)
	}
}

// repackSoon asks the repack loop for a repack when enough loose objects
// piled up; requests coalesce. Called after commits.
func (a *Agent) repackSoon(repo *gitmem.Repo) {
	if repo == nil || !repo.RepackDue() {
		return
	}
	select {
	case a.repackC <- struct{}{}:
	default:
	}
}
