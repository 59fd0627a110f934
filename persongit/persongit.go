// Package persongit is the agent's wait on a person's git operation in
// its folder (gitmem.PersonGit): while `git commit`, `git revert`, a merge
// or a rebase waits on its editor or on the person, any commit of
// memfsd's moves HEAD under it and makes it fail. So memfsd holds every
// commit and every sync that can move HEAD — all of them, since git's
// compare-and-swap on HEAD fails whatever files either side touched —
// until the signs are gone, for at most the wait
// (config.Config.PersonGitWait). Writes made meanwhile stay in the work
// tree and are committed after the person's commit, on top of it. The
// .git is the agent's to write, so the wait is bounded and cannot be
// renewed at will (Wait's budget).
package persongit

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memfsd/memfsd/gitmem"
)

// DefaultWait bounds how long memfsd's commits wait on a person's git
// operation in the folder.
const DefaultWait = 3 * time.Minute

// Poll is how often a held commit or turn looks whether the person's
// operation ended (git leaves no event to wait on).
const Poll = 100 * time.Millisecond

// StagedLeftAfter: paths someone else staged and memfsd has found staged
// for this many times the wait (the wait) are taken as left behind
// and committed as staged, by memfsd, so later writes of the agent's to
// them are not held for ever.
const StagedLeftAfter = 3

// Status is status's person_git_in_progress: a person's git operation
// in the folder, and whether memfsd's commits wait for it.
type Status struct {
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

// Wait is the agent's wait on a person's git operation. The
// waiting is paid from a budget of the wait: it drains while memfsd
// waits and fills again, as fast, while it does not. Emptied, memfsd goes
// on, and waits again only once it is full (so a sign touched, or removed
// and made again, buys no more than the bound, half of the time); the
// signs that emptied it never hold memfsd again.
type Wait struct {
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
	deferred []Deferred
}

// Deferred is a memory-tool write whose commit waits on a person's
// git: the files are written, the commit (its message, trailer and
// author) comes after the person's.
type Deferred struct {
	Paths   []string
	Message string
	Author  *gitmem.Signature
}

// Look decides, from the signs of a person's git operation the folder
// showed at now (s; err when they could not be read, which counts as
// none: the signs only ever delay commits), whether memfsd waits for it
// (nil: none in progress), logging on log when that changes.
func (p *Wait) Look(s gitmem.PersonGitSigns, err error, now time.Time, wait time.Duration, log *slog.Logger) *Status {
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
		p.budget -= min(d, Poll)
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
		log.Debug("reading the signs of a person's git operation failed", "err", err)
		return nil
	}
	if !s.Any() {
		if wasHolding {
			log.Info("the person's git operation in the folder ended; memfsd's commits go on")
		}
		p.since = time.Time{}
		if len(s.Stale) == 0 {
			return nil
		}
		if wasHolding {
			// Waited on until they aged past the bound: as good as the
			// budget run out (touching them again buys nothing).
			log.Warn("waited the bound on a person's git operation in the folder; memfsd's commits go on (the person's commit may then fail: run it again)", "signs", s.Stale, "waited", wait)
			p.spent = true
		}
		// Only signs older than the wait: left behind, not waited on.
		return &Status{Signs: s.Stale, Message: "signs of a person's git operation left in the memory folder (" + strings.Join(s.Stale, ", ") + "), older than " + wait.String() + ": memfsd does not wait on them"}
	}
	if p.since.IsZero() {
		p.since = now
	}
	switch {
	case s.Key == p.spentKey:
	case p.budget <= 0 || p.spent:
		if !p.spent {
			log.Warn("waited the bound on a person's git operation in the folder; memfsd's commits go on (the person's commit may then fail: run it again)", "signs", s.Signs, "waited", wait)
		}
		p.spent, p.spentKey = true, s.Key
	default:
		p.holding = true
		if !wasHolding {
			log.Info("a person's git operation is in progress in the folder; memfsd's commits wait for it", "signs", s.Signs, "staged", s.Staged, "at_most", p.budget)
		}
	}
	signs := append(slices.Clone(s.Signs), s.Stale...)
	pg := &Status{Signs: signs, Staged: s.Staged, Since: p.since.UTC(), Holding: p.holding}
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

// Defer records a memory-tool commit held by a person's git.
func (p *Wait) Defer(d Deferred) {
	p.mu.Lock()
	p.deferred = append(p.deferred, d)
	p.mu.Unlock()
}

// Waiting reports held work that the end of a wait must finish:
// deferred tool commits or a held sync.
func (p *Wait) Waiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.deferred) > 0 || p.turnHeld
}

// HasDeferred reports tool commits waiting: a later one waits behind
// them, so the commits land in call order.
func (p *Wait) HasDeferred() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.deferred) > 0
}

// TakeDeferred hands the deferred tool commits over, oldest first.
func (p *Wait) TakeDeferred() []Deferred {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.deferred
	p.deferred = nil
	return d
}

// Requeue puts back deferred commits that did not land.
func (p *Wait) Requeue(d []Deferred) {
	p.mu.Lock()
	p.deferred = append(d, p.deferred...)
	p.mu.Unlock()
}

// HoldTurn marks a sync as held; the end of the wait kicks one.
func (p *Wait) HoldTurn() {
	p.mu.Lock()
	p.turnHeld = true
	p.mu.Unlock()
}

// ReleaseTurn clears the held sync, reporting whether one was held.
func (p *Wait) ReleaseTurn() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	held := p.turnHeld
	p.turnHeld = false
	return held
}

// StagedLeft records which of tried were found staged by someone else
// (staged) and returns those found staged for StagedLeftAfter times wait:
// left behind, to be committed as they were staged.
func (p *Wait) StagedLeft(tried, staged []string, wait time.Duration) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.stagedSince == nil {
		p.stagedSince = map[string]time.Time{}
	}
	var left []string
	for _, x := range tried {
		if !slices.Contains(staged, x) {
			delete(p.stagedSince, x)
			continue
		}
		since, ok := p.stagedSince[x]
		if !ok {
			p.stagedSince[x] = now
			continue
		}
		if now.Sub(since) >= StagedLeftAfter*wait {
			left = append(left, x)
			delete(p.stagedSince, x)
		}
	}
	return left
}
