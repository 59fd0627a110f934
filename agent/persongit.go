package agent

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memfsd/memfsd/gitmem"
)

// A person's git in the agent's folder (gitmem.PersonGit): while `git
// commit`, `git revert`, a merge or a rebase waits on its editor or on
// the person, any commit of memfsd's moves HEAD under it and makes it
// fail. So memfsd holds every commit and every sync that can move HEAD —
// all of them, since git's compare-and-swap on HEAD fails whatever files
// either side touched — until the signs are gone, for at most
// Config.PersonGitWait. Writes made meanwhile stay in the work tree and
// are committed after the person's commit, on top of it. The .git is the
// agent's to write, so the wait is bounded and cannot be renewed at will
// (personGitState's budget).

// DefaultPersonGitWait bounds how long memfsd's commits wait on a
// person's git operation in the folder.
const DefaultPersonGitWait = 3 * time.Minute

// personGitPoll is how often a held commit or turn looks whether the
// person's operation ended (git leaves no event to wait on).
const personGitPoll = 100 * time.Millisecond

// stagedLeftAfter: paths someone else staged and memfsd has found staged
// for this many times the wait (PersonGitWait) are taken as left behind
// and committed as staged, by memfsd, so later writes of the agent's to
// them are not held for ever.
const stagedLeftAfter = 3

// ErrPersonGitInProgress is returned by a sync held by a person's git
// operation in the folder.
var ErrPersonGitInProgress = errors.New("a person's git operation is in progress in the memory folder")

// PersonGit is status's person_git_in_progress: a person's git operation
// in the folder, and whether memfsd's commits wait for it.
type PersonGit struct {
	// Signs are what git left in .git: REVERT_HEAD, CHERRY_PICK_HEAD,
	// MERGE_HEAD, rebase-merge, rebase-apply, sequencer, index.lock,
	// COMMIT_EDITMSG (newer than the branch) or staged (index entries
	// memfsd did not stage).
	Signs []string `json:"signs"`
	// Staged are the paths staged by someone else: never committed by
	// memfsd, also once the wait ran out.
	Staged []string `json:"staged,omitempty"`
	// Since is when memfsd first saw the operation; Until, while memfsd
	// waits, is when it goes on regardless.
	Since time.Time  `json:"since"`
	Until *time.Time `json:"until,omitempty"`
	// Holding says memfsd's commits and syncs wait; false once the wait
	// ran out (they go on; staged paths are still left alone).
	Holding bool   `json:"holding"`
	Message string `json:"message"`
}

// personGitState is the agent's wait on a person's git operation. The
// waiting is paid from a budget of PersonGitWait: it drains while memfsd
// waits and fills again, as fast, while it does not. Emptied, memfsd goes
// on, and waits again only once it is full (so a sign touched, or removed
// and made again, buys no more than the bound, half of the time); the
// signs that emptied it never hold memfsd again.
type personGitState struct {
	mu      sync.Mutex
	since   time.Time     // when the current signs were first seen (zero: none)
	budget  time.Duration // waiting left
	at      time.Time     // when budget was last brought up to date (zero: full)
	holding bool          // the last decision
	// spent: the budget ran out and has not filled up again.
	spent bool
	// spentKey are the signs the budget ran out on (never waited on again).
	spentKey string
	// sawSigns and lastKey are what the last look found.
	sawSigns bool
	lastKey  string
	// turnHeld: a sync was held; the end of the wait kicks one.
	turnHeld bool
	// stagedSince is when each path was first found staged by someone
	// else (stagedLeft).
	stagedSince map[string]time.Time
	// deferred are memory-tool commits held back, in call order.
	deferred []deferredCommit
}

// deferredCommit is a memory-tool write whose commit waits on a person's
// git: the files are written, the commit (its message, trailer and
// author) comes after the person's.
type deferredCommit struct {
	paths   []string
	message string
	author  *gitmem.Signature
}

// personGitWait is Config.PersonGitWait, or its default.
func (c *Config) personGitWait() time.Duration {
	if c.PersonGitWait > 0 {
		return c.PersonGitWait
	}
	return DefaultPersonGitWait
}

// personGit reads the folder's signs of a person's git operation and
// decides whether memfsd waits for it (nil: none in progress). A sign
// that cannot be read counts as none: the signs only ever delay commits.
func (a *Agent) personGit(repo *gitmem.Repo) *PersonGit {
	if repo == nil {
		return nil
	}
	wait := a.cfg.personGitWait()
	now := time.Now()
	s, err := repo.PersonGit(now, wait)
	p := &a.pg
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		s = gitmem.PersonGitSigns{} // unreadable: no signs we can go by
	}
	// Bring the budget up to date for the time since the last look: it
	// drains while memfsd waited, and while signs may have stood unseen
	// (none at the last look, some now: at most one poll's worth, so a
	// sign removed and made again between looks still pays); it fills
	// while there were none, or only those the budget already ran out on.
	d := now.Sub(p.at)
	switch {
	case p.at.IsZero():
		p.budget = wait
	case p.holding:
		p.budget -= d
	case !p.sawSigns && s.Any():
		p.budget -= min(d, personGitPoll)
	case !p.sawSigns, p.lastKey == p.spentKey:
		p.budget += d
	}
	p.budget = min(max(p.budget, 0), wait)
	p.at, p.sawSigns, p.lastKey = now, s.Any(), s.Key
	if p.spent && p.budget >= wait {
		p.spent = false
	}
	wasHolding := p.holding
	p.holding = false
	if err != nil {
		a.log.Debug("reading the signs of a person's git operation failed", "err", err)
		return nil
	}
	if !s.Any() {
		if wasHolding {
			a.log.Info("the person's git operation in the folder ended; memfsd's commits go on")
		}
		p.since = time.Time{}
		if len(s.Stale) == 0 {
			return nil
		}
		if wasHolding {
			// Waited on until they aged past the bound: as good as the
			// budget run out (touching them again buys nothing).
			a.log.Warn("waited the bound on a person's git operation in the folder; memfsd's commits go on (the person's commit may then fail: run it again)", "signs", s.Stale, "waited", wait)
			p.spent = true
		}
		// Only signs older than the wait: left behind, not waited on.
		return &PersonGit{Signs: s.Stale, Message: "signs of a person's git operation left in the memory folder (" + strings.Join(s.Stale, ", ") + "), older than " + wait.String() + ": memfsd does not wait on them"}
	}
	if p.since.IsZero() {
		p.since = now
	}
	switch {
	case s.Key == p.spentKey:
	case p.budget <= 0 || p.spent:
		if !p.spent {
			a.log.Warn("waited the bound on a person's git operation in the folder; memfsd's commits go on (the person's commit may then fail: run it again)", "signs", s.Signs, "waited", wait)
		}
		p.spent, p.spentKey = true, s.Key
	default:
		p.holding = true
		if !wasHolding {
			a.log.Info("a person's git operation is in progress in the folder; memfsd's commits wait for it", "signs", s.Signs, "staged", s.Staged, "at_most", p.budget)
		}
	}
	signs := append(slices.Clone(s.Signs), s.Stale...)
	pg := &PersonGit{Signs: signs, Staged: s.Staged, Since: p.since.UTC(), Holding: p.holding}
	if pg.Holding {
		until := now.Add(p.budget).UTC()
		pg.Until = &until
		pg.Message = "a person's git operation is in progress in the memory folder (" + strings.Join(signs, ", ") + "): memfsd's commits and syncs wait until it ends, at most until " + until.Format(time.RFC3339) + "; writes go on and are committed after it"
	} else {
		pg.Message = "signs of a person's git operation in the memory folder (" + strings.Join(signs, ", ") + "); memfsd waited " + wait.String() + " and goes on"
	}
	if len(s.Staged) > 0 {
		pg.Message += "; staged paths are the person's and are not committed by memfsd"
	}
	return pg
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
	a.pg.mu.Lock()
	a.pg.deferred = append(a.pg.deferred, deferredCommit{paths: append([]string(nil), paths...), message: message, author: author})
	a.pg.mu.Unlock()
	a.pollPersonGit(personGitPoll)
}

// personGitWaiting reports held work that the end of a wait must finish:
// deferred tool commits or a held sync.
func (a *Agent) personGitWaiting() bool {
	a.pg.mu.Lock()
	defer a.pg.mu.Unlock()
	return len(a.pg.deferred) > 0 || a.pg.turnHeld
}

// takeDeferred hands the deferred tool commits over, oldest first.
func (a *Agent) takeDeferred() []deferredCommit {
	a.pg.mu.Lock()
	defer a.pg.mu.Unlock()
	d := a.pg.deferred
	a.pg.deferred = nil
	return d
}

// requeueDeferred puts back deferred commits that did not land.
func (a *Agent) requeueDeferred(d []deferredCommit) {
	a.pg.mu.Lock()
	a.pg.deferred = append(d, a.pg.deferred...)
	a.pg.mu.Unlock()
}

// holdTurn marks a sync as held; the end of the wait kicks one.
func (a *Agent) holdTurn() {
	a.pg.mu.Lock()
	a.pg.turnHeld = true
	a.pg.mu.Unlock()
	a.pollPersonGit(personGitPoll)
}

// releaseTurn kicks the sync a wait held, if any.
func (a *Agent) releaseTurn() {
	a.pg.mu.Lock()
	held := a.pg.turnHeld
	a.pg.turnHeld = false
	a.pg.mu.Unlock()
	if held && a.kick != nil {
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
	a.pg.mu.Lock()
	defer a.pg.mu.Unlock()
	now := time.Now()
	if a.pg.stagedSince == nil {
		a.pg.stagedSince = map[string]time.Time{}
	}
	var left []string
	for _, p := range tried {
		if !slices.Contains(staged, p) {
			delete(a.pg.stagedSince, p)
			continue
		}
		since, ok := a.pg.stagedSince[p]
		if !ok {
			a.pg.stagedSince[p] = now
			continue
		}
		if now.Sub(since) >= stagedLeftAfter*a.cfg.personGitWait() {
			left = append(left, p)
			delete(a.pg.stagedSince, p)
		}
	}
	return left
}
