package mirror

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// mirrorLoop copies the primary's newest tip to the agent's mirror: one
// goroutine per agent that has a mirror, owned by its Mirror (started by
// the agent's Open or Set, stopped by Unset, Set or the agent's Close). Turns
// only kick it (a non-blocking send on a channel of one), so a turn never
// waits on the mirror, and kicks coalesce: each attempt pushes the newest
// tip the primary has. It takes neither the sync lock nor, across the
// network, the repository's lock (gitmem.PushMirror).
type mirrorLoop struct {
	a      *agent.Agent
	url    string
	source string
	kick   chan struct{}
	reqs   chan mirrorReq
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	state    string
	lastErr  *agent.LastError
	failures int           // in a row
	pushed   plumbing.Hash // the mirror's tip after this loop's last good push
	primary  plumbing.Hash
	pending  int
	lastPush time.Time
	nextTry  time.Time
	// behindSince is when the loop first saw the primary ahead of the
	// mirror (zero when the mirror is level): the lag metric.
	behindSince time.Time
}

// mirrorReq is an operator's "push now" (memfsd mirror push).
type mirrorReq struct {
	force bool
	reply chan agent.MirrorPush // buffered: the loop never blocks on it
}

// Mirror is one agent's mirror (agent.Mirror): its loop, started by the
// agent's Open or by Set, stopped by Unset, Set or the agent's Close.
type Mirror struct {
	a    *agent.Agent
	mu   sync.Mutex
	loop *mirrorLoop // nil without a mirror (or before Open)
}

// Attach gives agent a its mirror, before a's Open (the daemon, and memfsd
// commands that run an agent, call it for each agent they make).
func Attach(a *agent.Agent) *Mirror {
	m := &Mirror{a: a}
	a.Mirror = m
	return m
}

// Of is agent a's mirror: the one attached, else one that knows only
// what is on disk and never starts a loop (Set records the URL only).
func Of(a *agent.Agent) *Mirror {
	if m, ok := a.Mirror.(*Mirror); ok {
		return m
	}
	return &Mirror{a: a}
}

// Start starts the mirror loop when the agent has a mirror. A shared
// repository's unit has none: its ID is the repository's name, and the
// mirror settings (template, mirror-url) are per agent — they would copy
// the shared repository into the mirror of the agent of that name.
func (mm *Mirror) Start() {
	a := mm.a
	if a.Shared() {
		return
	}
	u, source := mirrorURLOf(a.Config(), a.ID)
	if u == "" {
		return
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.loop != nil || a.Lifetime().Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(a.Lifetime())
	m := &mirrorLoop{a: a, url: u, source: source, kick: make(chan struct{}, 1), reqs: make(chan mirrorReq, 4),
		cancel: cancel, done: make(chan struct{}), state: StatePending}
	mm.loop = m
	go m.run(ctx)
}

// Stop stops the mirror loop and waits for it.
func (mm *Mirror) Stop() {
	mm.mu.Lock()
	m := mm.loop
	mm.loop = nil
	mm.mu.Unlock()
	if m != nil {
		m.cancel()
		<-m.done
	}
}

func (mm *Mirror) mirrorLoop() *mirrorLoop {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	return mm.loop
}

// Kick tells the mirror loop the primary may have moved (after each
// successful sync). It never blocks.
func (mm *Mirror) Kick() {
	if m := mm.mirrorLoop(); m != nil {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

func (m *mirrorLoop) run(ctx context.Context) {
	defer close(m.done)
	defer func() { // a panic ends the mirror loop only: never the agent, never the daemon
		if v := recover(); v != nil {
			m.a.Logger().Error("internal error (panic) in the mirror loop; the mirror stops until the next start", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	p := m.a.Config().Retry
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.Multiplier, b.MaxInterval = p.Initial, p.Multiplier, p.Max
	b.RandomizationFactor = 0.5
	b.MaxElapsedTime = 0 // a mirror that is down is retried until it is back
	b.Reset()
	var timer *time.Timer
	var retryC <-chan time.Time
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
		}
		timer, retryC = nil, nil
	}
	defer stopTimer()
	var waiting []mirrorReq
	force, manual := false, false
	for first := true; ; first = false {
		if !first { // the first pass catches up with what the last run left
			if !m.wait(ctx, retryC, &waiting, &force, &manual) {
				return
			}
		}
		stopTimer()
		e, err := m.attempt(ctx, force, manual)
		force, manual = false, false
		for _, w := range waiting {
			w.reply <- e
		}
		waiting = nil
		if err == nil {
			b.Reset()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if !retryAgain(err) {
			b.Reset() // a person acts; the next primary push tries again
			continue
		}
		wait := b.NextBackOff()
		var re *retry.Error
		if errors.As(err, &re) && re.RetryAfter > wait {
			wait = re.RetryAfter
		}
		m.mu.Lock()
		m.nextTry = time.Now().Add(wait)
		m.mu.Unlock()
		timer = time.NewTimer(wait)
		retryC = timer.C
	}
}

// wait blocks until an attempt is due: a kick (the primary moved), the
// retry timer, or an operator's push; false when the loop must stop.
// While backing off, a kick only refreshes the pending count: the newer
// tip waits for the retry, no storm on a mirror that is down.
func (m *mirrorLoop) wait(ctx context.Context, retryC <-chan time.Time, waiting *[]mirrorReq, force, manual *bool) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-m.kick:
			if retryC == nil {
				return true
			}
			m.refresh()
		case <-retryC:
			return true
		case req := <-m.reqs:
			*waiting = append(*waiting, req)
			*force, *manual = *force || req.force, true
			return true
		}
	}
}

// refresh re-reads how far the mirror is behind (local refs only).
func (m *mirrorLoop) refresh() {
	repo := m.a.Repository()
	if repo == nil {
		return
	}
	pos, err := repo.MirrorPosition()
	if err != nil {
		return
	}
	m.mu.Lock()
	m.primary = pos.Primary
	if pos.Primary != m.pushed {
		m.pending = pos.Pending
	}
	m.mu.Unlock()
}

// retryAgain: failures the loop retries on its own — retryable ones, and
// a mirror that moved between its advertisement and the push (the next
// attempt sees where it is now).
func retryAgain(err error) bool {
	switch retry.ClassOf(err) {
	case retry.ClassRetryable:
		return true
	case retry.ClassNonFastForward:
		return !errors.Is(err, gitmem.ErrMirrorDiverged)
	}
	return false
}

// attempt pushes the primary's last known tip unless this loop already
// put it on the mirror (then no network at all; an operator's push
// always asks the mirror).
func (m *mirrorLoop) attempt(ctx context.Context, force, manual bool) (agent.MirrorPush, error) {
	repo := m.a.Repository()
	if repo == nil {
		return agent.MirrorPush{}, nil // not cloned yet: its first sync kicks again
	}
	pos, err := repo.MirrorPosition()
	if err == nil {
		m.mu.Lock()
		m.primary = pos.Primary
		if pos.Primary.IsZero() || (!manual && pos.Primary == m.pushed) {
			m.pending, m.behindSince = 0, time.Time{}
			if m.lastErr == nil {
				m.state = StateSynced
			}
			m.mu.Unlock()
			return agent.MirrorPush{}, nil
		}
		if m.behindSince.IsZero() {
			m.behindSince = time.Now()
		}
		m.state = StatePushing
		m.mu.Unlock()
	}
	var e agent.MirrorPush
	if same(m.url, m.a.Remote().URL) {
		err = &mirrorError{err: retry.Wrap("mirror "+m.a.ID, fmt.Errorf("the mirror %s is the agent's primary remote: set another (memfsd mirror set --agent %s%s --url ...) or unset it", agent.RedactURL(m.url), m.a.ID, m.a.Config().HomeArg())), agent: m.a.ID, home: m.a.Config().HomeArg()}
		e = agent.MirrorPush{At: time.Now().UTC(), Outcome: "failed", Class: string(retry.ClassOf(err)), Error: mirrorMessage(err), NextStep: retry.NextStep(err)}
	} else {
		p := m.a.Config().Retry.AttemptTimeout
		if p <= 0 {
			p = retry.DefaultAttemptTimeout
		}
		actx, cancel := context.WithTimeout(ctx, p)
		e, err = pushOnce(actx, m.a, repo, m.url, force)
		cancel()
	}
	if err != nil && ctx.Err() != nil {
		return e, err // stopping: not a mirror failure
	}
	m.record(repo, e, err)
	return e, err
}

// record updates the loop's state after an attempt, tells the hooks, and
// logs the first failure of a run and the recovery (not every retry).
func (m *mirrorLoop) record(repo *gitmem.Repo, e agent.MirrorPush, err error) {
	pos, perr := repo.MirrorPosition()
	m.mu.Lock()
	defer m.mu.Unlock()
	if perr == nil {
		m.primary, m.pending = pos.Primary, pos.Pending
	}
	m.nextTry = time.Time{}
	if err == nil {
		if m.failures > 0 {
			m.a.Logger().Info("mirror recovered", "mirror", agent.RedactURL(m.url), "after_failures", m.failures)
		}
		m.failures, m.lastErr = 0, nil
		m.pushed = plumbing.NewHash(e.Tip)
		m.lastPush = e.At
		m.state = StateSynced
		if m.pushed != m.primary {
			m.state = StatePending // the primary moved meanwhile: kicked again
		} else {
			m.pending, m.behindSince = 0, time.Time{}
		}
		if h := m.a.Hooks.Mirrored; h != nil {
			h(e.Outcome, retry.ClassNone)
		}
		return
	}
	m.failures++
	class := retry.ClassOf(err)
	m.lastErr = &agent.LastError{Class: string(class), Message: mirrorMessage(err), At: e.At, Attempts: m.failures, NextStep: retry.NextStep(err)}
	m.state = StateError
	if retryAgain(err) {
		m.state = StateRetrying
	}
	if m.failures == 1 {
		m.a.Logger().Warn("mirror push failed; the primary has every commit", "mirror", agent.RedactURL(m.url), "class", string(class), "err", err)
	}
	if h := m.a.Hooks.Mirrored; h != nil {
		h("failed", class)
	}
}

// status is the loop's view of the mirror.
func (m *mirrorLoop) status() agent.MirrorStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := agent.MirrorStatus{URL: agent.RedactURL(m.url), Source: m.source, State: m.state, LastPushedTip: agent.HashString(m.pushed),
		PrimaryTip: agent.HashString(m.primary), Pending: m.pending}
	if m.lastErr != nil {
		e := *m.lastErr
		st.LastError = &e
	}
	if !m.lastPush.IsZero() {
		t := m.lastPush
		st.LastPushAt = &t
	}
	if !m.nextTry.IsZero() {
		t := m.nextTry.UTC()
		st.NextAttemptAt = &t
	}
	return st
}

// Status is the agent's mirror as status shows it (nil when it has none);
// withLog adds the push log.
func (mm *Mirror) Status(withLog bool) *agent.MirrorStatus {
	a := mm.a
	var st agent.MirrorStatus
	if m := mm.mirrorLoop(); m != nil {
		st = m.status()
		if st.LastPushedTip == "" || st.PrimaryTip == "" {
			// A loop that has not pushed yet (right after mirror set)
			// knows nothing itself: what the repository knows is true.
			if repo := a.Repository(); repo != nil {
				if pos, err := repo.MirrorPosition(); err == nil {
					if st.LastPushedTip == "" {
						st.LastPushedTip = agent.HashString(pos.Mirror)
					}
					if st.PrimaryTip == "" {
						st.PrimaryTip, st.Pending = agent.HashString(pos.Primary), pos.Pending
					}
				}
			}
		}
		if withLog {
			st.Log = readRecord(a).Log
		}
	} else {
		u, source := mirrorURLOf(a.Config(), a.ID)
		repo := a.Repository()
		if u == "" || repo == nil || a.Shared() {
			return nil
		}
		st = diskStatus(a, repo, u, source)
		if !withLog {
			st.Log = nil
		}
	}
	if st.Log == nil && withLog {
		st.Log = []agent.MirrorPush{}
	}
	return &st
}

// Lag is how many primary commits the mirror lacks and for how long it
// has lacked them (ok false when the agent has no mirror loop).
func (mm *Mirror) Lag() (pending int, lag time.Duration, ok bool) {
	m := mm.mirrorLoop()
	if m == nil {
		return 0, 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.behindSince.IsZero() {
		lag = time.Since(m.behindSince)
	}
	return m.pending, lag, true
}

// Set records the operator's mirror URL for this agent and (re)starts
// the mirror loop, which pushes at once.
func (mm *Mirror) Set(raw string) error {
	a := mm.a
	u, err := checkMirrorURL(raw)
	if err != nil {
		return err
	}
	if same(u, a.Remote().URL) {
		return fmt.Errorf("mirror url %q is agent %s's primary remote: the mirror must be another repository", agent.RedactURL(u), a.ID)
	}
	if err := SetOnDisk(a.Config(), a.ID, u); err != nil {
		return err
	}
	// Only the attached mirror runs a loop: the agent's Close stops that
	// one, and nothing would stop a loop of one Of made (package doc).
	if cur, ok := a.Mirror.(*Mirror); a.Background && ok && cur == mm {
		mm.Stop()
		mm.Start()
	}
	return nil
}

// Unset turns the agent's mirror off and stops its loop. Nothing is
// removed from the mirror.
func (mm *Mirror) Unset() error {
	a := mm.a
	if err := UnsetOnDisk(a.Config(), a.ID); err != nil {
		return err
	}
	mm.Stop()
	return nil
}

// PushNow asks the mirror loop for a push now (force: overwrite a
// mirror that has commits the primary does not) and waits up to wait for
// its outcome; finished is false when the push goes on past wait.
func (mm *Mirror) PushNow(done <-chan struct{}, wait time.Duration, force bool) (e agent.MirrorPush, finished bool, err error) {
	a := mm.a
	m := mm.mirrorLoop()
	if m == nil {
		return e, false, fmt.Errorf("mirror push %s: %w", a.ID, ErrNoMirror)
	}
	req := mirrorReq{force: force, reply: make(chan agent.MirrorPush, 1)}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case m.reqs <- req:
	case <-t.C:
		return e, false, nil
	case <-done:
		return e, false, nil
	}
	select {
	case e = <-req.reply:
		if e.Outcome == "failed" {
			return e, true, fmt.Errorf("mirror push %s: %s", a.ID, e.Error)
		}
		return e, true, nil
	case <-t.C:
	case <-done:
	}
	return e, false, nil
}
