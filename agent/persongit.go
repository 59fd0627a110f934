package agent

import (
	"errors"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/persongit"
)

// A person's git in the agent's folder: memfsd holds every commit and
// every sync that can move HEAD until the signs are gone, for at most
// Config.PersonGitWait (package persongit decides; Agent.pg).

// DefaultPersonGitWait bounds how long memfsd's commits wait on a
// person's git operation in the folder.
const DefaultPersonGitWait = persongit.DefaultWait

// personGitPoll is how often a held commit or turn looks whether the
// person's operation ended (git leaves no event to wait on).
const personGitPoll = persongit.Poll

// stagedLeftAfter: paths someone else staged and memfsd has found staged
// for this many times the wait are committed as staged (persongit).
const stagedLeftAfter = persongit.StagedLeftAfter

// ErrPersonGitInProgress is returned by a sync held by a person's git
// operation in the folder.
var ErrPersonGitInProgress = errors.New("a person's git operation is in progress in the memory folder")

// PersonGit is status's person_git_in_progress (persongit.Status).
type PersonGit = persongit.Status

// deferredCommit is a memory-tool write whose commit waits on a person's
// git (persongit.Deferred).
type deferredCommit = persongit.Deferred

// personGitWait is Config.PersonGitWait, or its default.
func (a *Agent) personGitWait() time.Duration {
	if a.cfg.PersonGitWait > 0 {
		return a.cfg.PersonGitWait
	}
	return DefaultPersonGitWait
}

// personGit reads the folder's signs of a person's git operation and
// decides whether memfsd waits for it (nil: none in progress).
func (a *Agent) personGit(repo *gitmem.Repo) *PersonGit {
	if repo == nil {
		return nil
	}
	wait := a.personGitWait()
	now := time.Now()
	s, err := repo.PersonGit(now, wait)
	return a.pg.Look(s, err, now, wait, a.log)
}

// holdForPerson keeps paths pending and polls until the person's
// operation ends (or the wait runs out).
func (a *Agent) holdForPerson(paths []string) {
	a.mu.Lock()
	for _, p := range paths {
		a.pending[p] = true
	}
	a.mu.Unlock()
	a.pollPersonGit(personGitPoll)
}

// pollPersonGit makes the commit loop look again after d.
func (a *Agent) pollPersonGit(d time.Duration) {
	if a.flushTimer != nil {
		a.flushTimer.Reset(d)
	}
}

// deferCommit records a memory-tool commit held by a person's git.
func (a *Agent) deferCommit(paths []string, message string, author *gitmem.Signature) {
	a.pg.Defer(deferredCommit{Paths: append([]string(nil), paths...), Message: message, Author: author})
	a.pollPersonGit(personGitPoll)
}

// personGitWaiting reports held work that the end of a wait must finish:
// deferred tool commits or a held sync.
func (a *Agent) personGitWaiting() bool { return a.pg.Waiting() }

// takeDeferred hands the deferred tool commits over, oldest first.
func (a *Agent) takeDeferred() []deferredCommit { return a.pg.TakeDeferred() }

// requeueDeferred puts back deferred commits that did not land.
func (a *Agent) requeueDeferred(d []deferredCommit) { a.pg.Requeue(d) }

// holdTurn marks a sync as held; the end of the wait kicks one.
func (a *Agent) holdTurn() {
	a.pg.HoldTurn()
	a.pollPersonGit(personGitPoll)
}

// releaseTurn kicks the sync a wait held, if any.
func (a *Agent) releaseTurn() {
	if a.pg.ReleaseTurn() && a.kick != nil {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

// stagedLeft records which of tried were found staged by someone else
// (staged) and returns those found staged for stagedLeftAfter times the
// wait: left behind, to be committed as they were staged.
func (a *Agent) stagedLeft(tried, staged []string) []string {
	return a.pg.StagedLeft(tried, staged, a.personGitWait())
}
