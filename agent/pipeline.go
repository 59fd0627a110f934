package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/guard"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/writeproblem"
)

// ErrMassDeleteHeld is returned when a sync found more than half of the
// tracked files (at least MassDeleteMin) or the whole folder gone and did
// not commit those deletions.
var ErrMassDeleteHeld = errors.New("mass delete held")

// MassDeleteMin is the fewest tracked files for the half rule to apply.
const MassDeleteMin = guard.MassDeleteMin

// IsMassDelete reports whether deleting deleted of tracked files (with
// remaining files left) must be held for a person to confirm
// (guard.IsMassDelete).
func IsMassDelete(deleted, tracked, remaining int) bool {
	return guard.IsMassDelete(deleted, tracked, remaining)
}

// DirectWriteMessage is the commit message of a file written straight into
// the work tree.
func DirectWriteMessage(kind, path string) string {
	return "memory: " + kind + " " + path
}

// commitOutcome is what one pass of the pipeline did.
type commitOutcome struct {
	Deleted   []string // deletions committed
	Committed int
	Held      []string // deletions held by the mass-delete guard
	Restored  []string // read-only writes undone
	// Failed are paths whose commit failed on their own (a full disk):
	// the others were committed; these stay pending.
	Failed []string
}

// commitDirect commits paths written straight into the folder, one commit
// per path, through the one pipeline (gitmem.Commit): under the repo's
// locks, against the bytes that get hashed, a write to a read-only block is
// undone (its bytes kept under .git/memfsd/rejected/) and a mass deletion is
// held unless acceptDeletes. The watcher's flush, a rescan and `memfsd
// sync` all come here, so they decide alike. Holds are recorded on disk.
//
// While a person's git operation is in progress in the folder (persongit.go)
// nothing is committed: the paths stay pending until it ends. Then the
// memory-tool commits that waited go first, in order, with their own
// messages, and the paths after them. A path someone else staged is left
// alone (theirs to commit).
//
// waitQuiet waits (a bounded few times gitmem.IndexQuiet) for a folder
// whose git was at work moments ago before holding the commit: a turn, a
// sync and the operator's accept answer with what they committed; the
// watcher's flush holds at once and looks again at the quiet.
func (a *Agent) commitDirect(paths []string, acceptDeletes, waitQuiet bool) (commitOutcome, error) {
	var out commitOutcome
	repo := a.repository()
	if repo == nil || (len(paths) == 0 && !a.personGitWaiting()) {
		return out, nil
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if repo = a.repository(); repo == nil { // a rebuild of the .git may have swapped it
		return out, ErrNotReady
	}
	if pg := a.personGit(repo); pg != nil && pg.Holding {
		a.holdForPerson(paths)
		return out, nil
	}
	deferred := a.takeDeferred()
	for i, d := range deferred {
		o, err := a.commitGuarded(repo, gitmem.CommitRequest{
			Paths: d.Paths, One: true, Author: d.Author,
			Message: func(gitmem.PathView) string { return d.Message },
		}, false, waitQuiet)
		out.add(o)
		if errors.Is(err, gitmem.ErrPersonGitActive) {
			// A person's git began while the commit was built: held as
			// for any operation in progress (it was not made).
			a.requeueDeferred(deferred[i:])
			a.holdForPerson(paths)
			a.holdTurn() // the sync after it carries them
			a.pollAtQuiet(err)
			return out, nil
		}
		if err != nil {
			a.requeueDeferred(deferred[i+1:])
			return out, err
		}
	}
	if len(paths) > 0 {
		o, err := a.commitGuarded(repo, gitmem.CommitRequest{
			Paths:   paths,
			Message: func(v gitmem.PathView) string { return DirectWriteMessage(v.Kind, v.Path) },
		}, acceptDeletes, waitQuiet)
		out.add(o)
		if errors.Is(err, gitmem.ErrPersonGitActive) {
			a.holdForPerson(paths)
			a.holdTurn() // the sync after it carries them
			a.pollAtQuiet(err)
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
	a.releaseTurn()
	return out, nil
}

// pollAtQuiet makes the commit loop look again as soon as the folder's
// git is quiet (gitmem.QuietError's wait), not a poll later: a person's
// pauses between commands are short, and the commits held fit in them.
func (a *Agent) pollAtQuiet(err error) {
	var quiet *gitmem.QuietError
	if errors.As(err, &quiet) {
		a.pollPersonGit(quiet.Wait + 5*time.Millisecond)
	}
}

func (o *commitOutcome) add(p commitOutcome) {
	o.Deleted = append(o.Deleted, p.Deleted...)
	o.Committed += p.Committed
	o.Held = append(o.Held, p.Held...)
	o.Restored = append(o.Restored, p.Restored...)
	o.Failed = append(o.Failed, p.Failed...)
}

// commitGuarded is one commit request of direct writes through the
// pipeline, judged by guard.DirectWrite, with its holds recorded. Under
// writeMu.
func (a *Agent) commitGuarded(repo *gitmem.Repo, req gitmem.CommitRequest, acceptDeletes, waitQuiet bool) (commitOutcome, error) {
	var out commitOutcome
	secrets := map[string]string{}                  // path → pattern, filled by the guard
	limits := map[string]reminders.LimitOver{}      // files committed over their limit
	broken := map[string]bool{}                     // front matter broken, held
	tree := map[string][]string{}                   // letta-code's tree rules broken more, held
	problems := map[string]reminders.WriteProblem{} // too large, bad name, failed
	paths := req.Paths
	holding := a.heldStillGone()
	mk := func(paths []string) gitmem.CommitRequest {
		r := req
		r.Paths = paths
		r.Guard = guard.OddInput(a.maxFileBytes(), problems, a.withTreeGuard(guard.DirectWrite(acceptDeletes, holding, a.secretPatterns(), a.frontMatterRules(), secrets, limits, broken), tree))
		r.Keep = a.keepRejected
		r.SkipStaged = true
		r.NoQuietWait = !waitQuiet // else held and polled at the quiet (pollAtQuiet)
		return r
	}
	res, err := repo.Commit(mk(paths))
	if err != nil && !errors.Is(err, gitmem.ErrPersonGitActive) && writeproblem.PerFileFailure(err) && !req.One {
		// One file's failure (a full disk for its blob) must not stop the
		// files written beside it: each is then a commit of its own, and
		// only the one that fails stays uncommitted.
		a.log.Warn("commit of a batch failed; committing its files one by one", "paths", len(paths), "err", err)
		if len(paths) == 1 {
			problems[paths[0]] = writeproblem.Of(paths[0], err)
			res, err = gitmem.CommitResult{}, nil
		} else {
			res, err = a.commitEach(repo, paths, mk, problems)
		}
	}
	for p, w := range problems {
		w.Detail = a.AgentFacing(w.Detail) // the agent reads it
		problems[p] = w
		if w.Cause == reminders.CauseDiskFull || w.Cause == reminders.CauseWriteFailed {
			out.Failed = append(out.Failed, p)
		}
	}
	slices.Sort(out.Failed)
	for _, w := range a.updateWriteProblems(paths, problems) {
		a.log.Warn("a direct write was not saved", "path", w.Path, "cause", w.Cause, "detail", w.Detail)
	}
	a.repackSoon(repo)
	if len(res.Staged) > 0 {
		// Someone else staged them: left as they are, looked at again
		// until they are committed (by them) or unstaged — or, left
		// staged past the bound, committed as staged by memfsd (not as
		// the agent's write), the agent's bytes then on top.
		a.log.Debug("paths staged by someone else left uncommitted", "paths", res.Staged)
		a.mu.Lock()
		for _, p := range res.Staged {
			a.pending[p] = true
		}
		a.mu.Unlock()
		if left := a.stagedLeft(req.Paths, res.Staged); len(left) > 0 {
			msg := "memfsd: commit what was left staged in the folder\n\nStaged by someone else and left uncommitted for " + (stagedLeftAfter * a.personGitWait()).String() + ":\n" + strings.Join(left, "\n")
			if h, serr := repo.CommitStaged(left, msg, gitmem.Signature{Name: "memfsd", Email: "memfsd@memfsd.local"}); serr != nil {
				a.log.Warn("committing what was left staged failed; tried again", "paths", left, "err", serr)
			} else {
				out.Committed++
				a.log.Warn("committed what someone else left staged in the folder past the bound, as memfsd (not as the agent's write)", "paths", left, "commit", h.String())
			}
		}
		a.pollPersonGit(maxDelay)
	} else {
		a.stagedLeft(req.Paths, nil)
	}
	if len(res.Skipped) > 0 {
		a.noteSkipped(res.Skipped, false)
	}
	out.Committed = len(res.Commits)
	for _, p := range res.Committed {
		if !a.workExists(p) {
			out.Deleted = append(out.Deleted, p)
		}
	}
	for _, rs := range res.Restored {
		out.Restored = append(out.Restored, rs.Path)
		a.log.Warn("undid a direct write to a read-only block; rejected bytes kept", "path", rs.Path)
	}
	var deletes []string
	for _, p := range res.Held {
		if _, ok := secrets[p]; !ok && !broken[p] && tree[p] == nil && problems[p].Cause == "" {
			deletes = append(deletes, p)
		}
	}
	out.Held = deletes
	if herr := a.updateHeld(deletes, res.Committed); herr != nil && err == nil {
		err = herr
	}
	if serr := a.updateSecrets(secrets, res.Committed); serr != nil && err == nil {
		err = serr
	}
	if lerr := a.updateLimits(limits, res.Committed); lerr != nil && err == nil {
		err = lerr
	}
	if ferr := a.updateFrontMatterHeld(broken, res.Committed); ferr != nil && err == nil {
		err = ferr
	}
	if cerr := a.updateConstraintsHeld(tree, res.Committed, true); cerr != nil && err == nil {
		err = cerr
	}
	for p, why := range tree {
		a.log.Warn("a direct write breaks letta-code's memory limits: not committed", "path", p, "problems", why)
	}
	for p := range broken {
		a.log.Warn("a direct write breaks the file's front matter: not committed", "path", p)
	}
	for p, pattern := range secrets {
		a.log.Warn("a direct write looks like it holds a credential: not committed", "path", p, "pattern", pattern)
	}
	if len(deletes) > 0 {
		a.log.Warn("mass delete held: nothing deleted on the remote", "files", len(deletes))
	}
	return out, err
}

// heldStillGone counts the held deletions whose files are still gone.
func (a *Agent) heldStillGone() int {
	n := 0
	for _, p := range a.readHeld() {
		if !a.workExists(p) {
			n++
		}
	}
	return n
}

// updateHeld adds newly held deletions to the record and drops committed
// ones.
func (a *Agent) updateHeld(held, committed []string) error {
	old := a.readHeld()
	if len(held) == 0 && len(old) == 0 {
		return nil
	}
	next := append([]string(nil), held...)
	for _, p := range old {
		if slices.Contains(committed, p) || slices.Contains(next, p) {
			continue
		}
		if a.workExists(p) {
			continue // the file is back: nothing held
		}
		next = append(next, p)
	}
	slices.Sort(next)
	if slices.Equal(next, old) {
		return nil
	}
	return a.writeHeld(next)
}

// outgoingGuard is the outgoing range check (SPEC §8), before every push:
// a read-only block must equal the remote's version (bytes and mode) and no
// front matter may gain or lose read_only, unless the operator set exactly
// that content (block set, recorded outside the memory folder) against a
// remote on which nobody changed the path since; and a range whose net
// effect deletes more than half of the remote's files (at least
// MassDeleteMin) is held until the operator accepts it or restores the
// files, for exactly that local tip. Whatever route made the change — a
// shell's git commit included — it is put back or held.
func (a *Agent) outgoingGuard(files []gitmem.OutgoingFile, remote gitmem.OutgoingRemote) (gitmem.OutgoingPlan, error) {
	var plan gitmem.OutgoingPlan
	// Read first, for every push: it also ends the approvals whose content
	// reached the remote or was superseded there.
	blocksApproved, err := a.liveBlockApprovals(remote)
	if err != nil {
		return plan, err
	}
	var approved map[string][]string
	var deleted []string
	created := 0
	rules := a.frontMatterRules()
	for _, f := range files {
		switch {
		case f.InRemote && !f.InLocal:
			deleted = append(deleted, f.Path)
		case !f.InRemote && f.InLocal:
			created++
		}
		if !blocks.MayBeReadOnly(f.Path) {
			continue
		}
		theirs, err := f.Remote()
		if err != nil {
			return plan, err
		}
		mine, err := f.Local()
		if err != nil {
			return plan, err
		}
		// The operator's block set writes a regular file: an approval is
		// for those bytes in that mode only.
		if f.InLocal && f.LocalMode() == filemode.Regular && blocksApproved[f.Path] == f.LocalHash().String() {
			continue // the operator's own change
		}
		if blocks.CheckAgentChange(f.Path, theirs, uint32(f.RemoteMode()), mine, uint32(f.LocalMode())) != nil {
			plan.ReadOnly = append(plan.ReadOnly, f.Path)
			continue
		}
		// Front matter, as for a direct write (a shell's git commit gets
		// here without the commit's guard): judged against the remote's
		// version, held back uncommitted while it breaks.
		if f.InLocal && guard.FrontMatterChange(f.Path, theirs, mine, f.LocalMode() == filemode.Symlink, rules) != nil {
			plan.HoldBack = append(plan.HoldBack, f.Path)
		}
	}
	// letta-code's tree rules, on the remote's tree with the range's
	// files: one that makes it worse is held back like broken front matter.
	treeHeld, err := a.outgoingTreeGuard(files, remote, plan)
	if err != nil {
		return plan, err
	}
	if len(treeHeld) > 0 {
		for p, why := range treeHeld {
			plan.HoldBack = append(plan.HoldBack, p)
			a.log.Warn("a commit breaks letta-code's memory limits: held back from the push, left in the folder uncommitted", "path", p, "problems", why)
		}
		slices.Sort(plan.HoldBack)
		if err := a.updateConstraintsHeld(treeHeld, nil, false); err != nil {
			return plan, err
		}
	}
	if len(plan.HoldBack) > len(treeHeld) {
		held := map[string]bool{}
		for _, p := range plan.HoldBack {
			if treeHeld[p] != nil {
				continue
			}
			held[p] = true
			a.log.Warn("a commit breaks the file's front matter: held back from the push, left in the folder uncommitted", "path", p)
		}
		if err := a.updateFrontMatterHeld(held, nil); err != nil {
			return plan, err
		}
	}
	if len(deleted) == 0 {
		return plan, a.writeHeldPush(heldRemote{})
	}
	tracked, err := remote.Files()
	if err != nil {
		return plan, err
	}
	if !IsMassDelete(len(deleted), tracked, tracked-len(deleted)+created) {
		return plan, a.writeHeldPush(heldRemote{})
	}
	if approved == nil {
		approved = a.readApproved()
	}
	tip := a.localTip()
	switch {
	case slices.Contains(approved[approvePushAccept], decisionKey(tip, deleted)):
		a.log.Info("pushing a mass deletion: accepted by the operator", "files", len(deleted))
		return plan, a.writeHeldPush(heldRemote{})
	case slices.Contains(approved[approvePushRestore], decisionKey(tip, deleted)):
		for _, p := range deleted {
			if !slices.Contains(plan.ReadOnly, p) {
				plan.Readd = append(plan.Readd, p)
			}
		}
		return plan, a.writeHeldPush(heldRemote{})
	}
	if err := a.writeHeldPush(heldRemote{Remote: tip, Paths: deleted}); err != nil {
		return plan, err
	}
	a.log.Warn("push held: the commits delete most of the memory", "files", len(deleted), "tracked", tracked)
	return plan, fmt.Errorf("%w: the commits to push delete %d of %d files", gitmem.ErrPushHeld, len(deleted), tracked)
}

// localTip is the branch's commit as a string ("" when unknown).
func (a *Agent) localTip() string {
	repo := a.repository()
	if repo == nil {
		return ""
	}
	h, err := repo.Head()
	if err != nil {
		return ""
	}
	return h.String()
}

// Operator decisions on a held remote update, in the operator's record
// (outside the memory folder), keyed by the remote tip they apply to.
const (
	approveRemoteAccept  = "remote-update:accept"
	approveRemoteRestore = "remote-update:restore"
	approvePushAccept    = "push:accept"
	approvePushRestore   = "push:restore"
)

// incomingGuard is the remote-deletion guard (SPEC §8): an update from the
// remote whose net effect deletes more than half of the tracked files (at
// least MassDeleteMin) is not applied until the operator accepts it or
// restores the files, for exactly that remote tip.
func (a *Agent) incomingGuard(u gitmem.IncomingUpdate) (gitmem.IncomingDecision, error) {
	tracked, err := u.Tracked()
	if err != nil {
		return gitmem.ApplyIncoming, err
	}
	if !IsMassDelete(len(u.Deleted), tracked, tracked-len(u.Deleted)+u.Created) {
		return gitmem.ApplyIncoming, a.writeHeldRemote(heldRemote{})
	}
	approved := a.readApproved()
	tip := u.Remote.String()
	switch {
	case slices.Contains(approved[approveRemoteAccept], decisionKey(tip, u.Deleted)):
		a.log.Info("applying a remote update with mass deletions: accepted by the operator", "files", len(u.Deleted))
		return gitmem.ApplyIncoming, a.writeHeldRemote(heldRemote{})
	case slices.Contains(approved[approveRemoteRestore], decisionKey(tip, u.Deleted)):
		return gitmem.RestoreIncoming, a.writeHeldRemote(heldRemote{})
	}
	a.log.Warn("remote update held: it would delete most of the memory", "files", len(u.Deleted), "tracked", tracked, "remote", tip)
	return gitmem.HoldIncoming, a.writeHeldRemote(heldRemote{Remote: tip, Paths: u.Deleted})
}

// secretPatterns are the patterns of the secret guard (none when off).
func (a *Agent) secretPatterns() []memtool.SecretPattern {
	if a.cfg.NoSecretGuard {
		return nil
	}
	return a.cfg.SecretPatterns
}
