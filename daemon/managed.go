package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// managed is one agent in the daemon: it owns the agent's repo, its
// pending writes and the loop that syncs at turns.
type managed struct {
	id  string
	d   *Daemon
	log *slog.Logger

	mu        sync.Mutex
	a         *agent.Agent // nil until the first successful open
	ready     bool         // startup sync finished (well or not)
	pending   map[string]bool
	firstSeen time.Time
	timer     *time.Timer
	held      []string // deletions held by the mass-delete guard
	rejected  []string // direct writes to read-only blocks that were undone
	rejSeen   bool     // the agent was told (reminders fetched) since
	// writeMu serialises the watcher's commits with memory-tool calls and
	// operator block changes, so no write is committed twice or halfway.
	writeMu  sync.Mutex
	lastErr  *LastError
	lastPush time.Time
	polling  bool

	// Turn coalescing: a turn waits for the first sync that starts after
	// it arrived; turns arriving during a sync share the next one.
	kick     chan struct{}
	started  int
	finished int
	last     TurnResult
	done     *sync.Cond

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newManaged(d *Daemon, id string) *managed {
	m := &managed{
		id:      id,
		d:       d,
		log:     d.log.With("agent", id),
		pending: map[string]bool{},
		kick:    make(chan struct{}, 1),
	}
	m.done = sync.NewCond(&m.mu)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

func (m *managed) startup() {
	defer func() {
		m.mu.Lock()
		m.ready = true
		m.mu.Unlock()
	}()
	if err := m.open(); err != nil {
		return
	}
	m.sync(agent.SyncOptions{})
	m.d.watch(m)
}

// open opens the agent once; later calls are no-ops.
func (m *managed) open() error {
	m.mu.Lock()
	if m.a != nil {
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	a, err := agent.Open(m.ctx, m.d.cfg, m.id)
	if err != nil {
		m.recordErr(err, 1)
		m.log.Error("open failed; retried at the next turn", "class", string(retry.ClassOf(err)), "err", err)
		return err
	}
	m.mu.Lock()
	m.a = a
	m.mu.Unlock()
	return nil
}

func (m *managed) agent() *agent.Agent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.a
}

// loop runs a sync for each kick until the agent is closed.
func (m *managed) loop() {
	var pull <-chan time.Time
	if m.d.PullInterval > 0 {
		t := time.NewTicker(m.d.PullInterval)
		defer t.Stop()
		pull = t.C
	}
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.kick:
			m.mu.Lock()
			m.started++
			gen := m.started
			m.mu.Unlock()
			res := m.turnOnce()
			m.mu.Lock()
			m.finished, m.last = gen, res
			m.done.Broadcast()
			m.mu.Unlock()
		case <-pull:
			m.turnOnce()
		}
	}
}

// turn asks for a sync and waits (up to wait) for the first one that
// starts after now.
func (m *managed) turn(wait time.Duration) TurnResult {
	m.mu.Lock()
	target := m.started + 1
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default: // a sync is already due: it is ours too
	}
	deadline := time.Now().Add(wait)
	timer := time.AfterFunc(wait, func() {
		m.mu.Lock()
		m.done.Broadcast()
		m.mu.Unlock()
	})
	defer timer.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.finished < target {
		if time.Now().After(deadline) || m.ctx.Err() != nil {
			return TurnResult{Outcome: OutcomeDelayed, Error: "the sync is still running; it goes on in the background"}
		}
		m.done.Wait()
	}
	return m.last
}

// turnOnce commits pending writes and syncs.
func (m *managed) turnOnce() TurnResult {
	if err := m.open(); err != nil {
		return TurnResult{Outcome: outcomeOf(err, nil), Error: err.Error()}
	}
	m.flush()
	m.mu.Lock()
	if m.rejSeen { // the agent has read the read-only reminder: its cause is spent
		m.rejected, m.rejSeen = nil, false
	}
	m.mu.Unlock()
	start := time.Now()
	res, err := m.sync(agent.SyncOptions{SkipScan: true})
	m.d.metrics.pushLatency.Observe(time.Since(start).Seconds())
	out := outcomeOf(err, &res)
	m.d.metrics.pushes.WithLabelValues(out).Inc()
	tr := TurnResult{Outcome: out, Pushed: res.Pushed}
	if err != nil {
		tr.Error = err.Error()
	}
	tr.Status = m.statusOf(false)
	return tr
}

func outcomeOf(err error, res *agent.SyncResult) string {
	switch {
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

// sync runs an agent sync and records its result.
func (m *managed) sync(opts agent.SyncOptions) (agent.SyncResult, error) {
	a := m.agent()
	res, err := a.Sync(m.ctx, opts)
	if res.Pulled {
		m.d.metrics.pulls.Inc()
	}
	m.d.metrics.commits.Add(float64(res.Committed))
	m.mu.Lock()
	if len(res.Held) > 0 {
		m.held = res.Held
	}
	m.mu.Unlock()
	if err != nil && !errors.Is(err, agent.ErrMassDeleteHeld) {
		m.recordErr(err, res.Attempts)
		m.log.Warn("sync failed", "class", string(retry.ClassOf(err)), "attempts", res.Attempts, "err", err)
		return res, err
	}
	m.mu.Lock()
	if m.lastErr != nil {
		m.log.Info("sync recovered", "after_class", m.lastErr.Class)
	}
	m.lastErr = nil
	if res.Pushed > 0 {
		m.lastPush = time.Now()
	}
	m.mu.Unlock()
	return res, nil
}

func (m *managed) recordErr(err error, attempts int) {
	class := retry.ClassOf(err)
	m.d.metrics.errors.WithLabelValues(string(class)).Inc()
	m.mu.Lock()
	m.lastErr = &LastError{Class: string(class), Message: err.Error(), At: time.Now().UTC(), Attempts: attempts}
	m.mu.Unlock()
}

// changed records a write to rel and (re)arms the debounce.
func (m *managed) changed(rel string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		m.firstSeen = time.Now()
	}
	m.pending[rel] = true
	delay := m.d.Debounce
	// A file written without pause still gets committed: at most
	// maxDelay after the first event of a burst.
	if left := time.Until(m.firstSeen.Add(maxDelay)); left < delay {
		delay = max(left, 0)
	}
	if m.timer == nil {
		m.timer = time.AfterFunc(delay, m.flush)
	} else {
		m.timer.Reset(delay)
	}
}

// maxDelay bounds how long a burst of writes can postpone its commits.
const maxDelay = 2 * time.Second

// flush commits each settled path, one commit per file, holding a mass
// deletion.
func (m *managed) flush() {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.Lock()
	paths := make([]string, 0, len(m.pending))
	for p := range m.pending {
		paths = append(paths, p)
	}
	clear(m.pending)
	a := m.a
	m.mu.Unlock()
	if a == nil || len(paths) == 0 {
		return
	}
	slices.Sort(paths)
	type item struct{ path, kind string }
	var items []item
	deletes := 0
	for _, p := range paths {
		kind, err := a.Repo.ChangeKind(p)
		if err != nil || kind == "" {
			continue
		}
		if m.d.guardReadOnly(m, p, kind) {
			continue
		}
		if kind == gitmem.ChangeDelete {
			deletes++
		}
		items = append(items, item{p, kind})
	}
	hold := false
	if deletes > 0 {
		tracked, err := a.Repo.TrackedFiles()
		if err == nil {
			remaining := countFiles(a.Repo.Dir)
			hold = agent.IsMassDelete(deletes, len(tracked), remaining)
		}
	}
	var held []string
	for _, it := range items {
		if hold && it.kind == gitmem.ChangeDelete {
			held = append(held, it.path)
			continue
		}
		_, err := a.Repo.CommitWrite([]string{it.path}, "memory: "+it.kind+" "+it.path)
		if errors.Is(err, gitmem.ErrNothingToCommit) {
			continue
		}
		if err != nil {
			m.log.Error("commit failed; kept for the next turn", "path", it.path, "err", err)
			m.mu.Lock()
			m.pending[it.path] = true
			m.mu.Unlock()
			continue
		}
		m.d.metrics.commits.Inc()
	}
	if hold {
		m.log.Warn("mass delete held: nothing deleted on the remote", "files", len(held))
		m.mu.Lock()
		m.held = held
		m.mu.Unlock()
	}
}

// scanAll queues every path that differs from HEAD (after an event
// overflow, or when polling).
func (m *managed) scanAll() {
	a := m.agent()
	if a == nil {
		return
	}
	dirty, err := a.Repo.DirtyPaths()
	if err != nil {
		m.log.Warn("scan failed", "err", err)
		return
	}
	m.mu.Lock()
	held := map[string]bool{}
	for _, p := range m.held {
		held[p] = true
	}
	m.mu.Unlock()
	for _, d := range dirty {
		if !held[d.Path] {
			m.changed(d.Path)
		}
	}
}

func countFiles(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// close stops the loop, commits pending writes and pushes within ctx.
func (m *managed) close(ctx context.Context) {
	m.mu.Lock()
	if m.timer != nil {
		m.timer.Stop()
	}
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	a := m.agent()
	if a == nil {
		return
	}
	m.flush()
	if _, err := a.Sync(ctx, agent.SyncOptions{SkipScan: true}); err != nil {
		m.log.Warn("final push failed; commits stay local for the next start", "class", string(retry.ClassOf(err)), "err", err)
	}
	a.Close()
}
