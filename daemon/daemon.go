// Package daemon is `memfsd run`: the process around the agents. It owns
// the one shared watcher, start-up scheduling, the HTTP API and metrics,
// and talks to agents only (agent.Agent owns everything about one agent).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/credentials"
	"github.com/memfsd/memfsd/mcpserver"
	"github.com/memfsd/memfsd/mirror"
	"github.com/memfsd/memfsd/retry"
)

// Defaults of the daemon's settings.
const (
	DefaultDebounce        = agent.DefaultDebounce
	DefaultShutdownTimeout = 10 * time.Second
	DefaultTurnWait        = 8 * time.Second
	// DefaultStartParallel bounds agents doing their start-up network sync
	// at once (opening and watching is not bounded: it is local).
	DefaultStartParallel = 8
	// DefaultScanParallel bounds full rescans at once (after an inotify
	// overflow every agent is rescanned).
	DefaultScanParallel = 4
)

// Daemon manages agents and serves the API. New starts nothing; Open
// starts the watcher and the poll loop; Close stops them and closes every
// agent with a bounded final push.
type Daemon struct {
	Debounce     time.Duration
	PullInterval time.Duration // 0 = no fetch between turns
	// MCP are the settings of the agents' MCP servers (/mcp on their own
	// sockets); zero fields take mcpserver's defaults.
	MCP mcpserver.Options

	cfg       *agent.Config
	log       *slog.Logger
	metrics   *metrics
	watcher   *watcher
	startSlot chan struct{}
	scanSlot  chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	agents map[string]*agent.Agent
	socks  agentSockets
	shared sharedUnits
	closed bool
}

// New makes a daemon over cfg (validated). It starts nothing.
func New(cfg *agent.Config) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Daemon{
		Debounce:  DefaultDebounce,
		cfg:       cfg,
		log:       cfg.Logger,
		agents:    map[string]*agent.Agent{},
		startSlot: make(chan struct{}, DefaultStartParallel),
		scanSlot:  make(chan struct{}, DefaultScanParallel),
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.metrics = newMetrics(d.pendingCommits, func() float64 { return float64(len(d.all())) }, d.mirrorLag)
	return d, nil
}

// Open starts the shared watcher and the poll loop.
func (d *Daemon) Open() error {
	w, err := newWatcher(d.log)
	if err != nil {
		return fmt.Errorf("start watcher: %w", err)
	}
	d.watcher = w
	d.wg.Add(2)
	go func() { defer d.wg.Done(); w.run(d.ctx) }()
	go func() { defer d.wg.Done(); d.pollLoop() }()
	for _, c := range []*credentials.Source{d.cfg.Credentials(), d.cfg.MirrorCredentials()} {
		if c != nil {
			// A rotated token file is picked up without a restart.
			d.wg.Add(1)
			go func() { defer d.wg.Done(); c.Watch(d.ctx) }()
		}
	}
	if c := d.cfg.Credentials(); c != nil {
		// A fixed token file is tried at once: the agents whose last
		// sync the remote refused as auth sync again now, so their
		// status does not keep the old error until the next turn.
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			for {
				select {
				case <-d.ctx.Done():
					return
				case <-c.Changed():
					for _, a := range d.all() {
						a.RetryAuth()
					}
				}
			}
		}()
	}
	return nil
}

// pollLoop asks, once a second, the agents whose folders could not be
// watched (inotify limits) to rescan. One ticker for the daemon: a
// thousand idle agents cost no wake-ups.
func (d *Daemon) pollLoop() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
		}
		for _, a := range d.all() {
			if a.Polling() {
				a.Rescan()
			}
		}
	}
}

// Manage starts managing an agent (idempotent): its work tree is opened
// and watched at once when it exists; cloning and the start-up sync run in
// the agent's own loop, at most DefaultStartParallel at a time.
func (d *Daemon) Manage(id string) error {
	if err := agent.ValidateID(id); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("manage: daemon is shutting down")
	}
	if _, ok := d.agents[id]; ok {
		return nil
	}
	a, err := agent.New(d.cfg, id)
	if err != nil {
		return err
	}
	a.Background = true
	mirror.Attach(a)
	a.Debounce, a.PullInterval = d.Debounce, d.PullInterval
	a.StartSlots, a.ScanSlots = d.startSlot, d.scanSlot
	a.OnReady = func() { d.watcher.add(a, a.Dir()) }
	a.Hooks = agent.Hooks{
		Committed: func(n int) { d.metrics.commits.Add(float64(n)) },
		Pulled:    func() { d.metrics.pulls.Inc() },
		Failed:    func(c retry.Class) { d.metrics.errors.WithLabelValues(string(c)).Inc() },
		Turned: func(outcome string, took time.Duration) {
			d.metrics.pushes.WithLabelValues(outcome).Inc()
			d.metrics.pushLatency.Observe(took.Seconds())
		},
		Mirrored: func(outcome string, c retry.Class) {
			d.metrics.mirrorPushes.WithLabelValues(outcome).Inc()
			if c != retry.ClassNone {
				d.metrics.mirrorFailures.WithLabelValues(string(c)).Inc()
			}
		},
	}
	// Set before Open: its goroutines and the agent's socket read it.
	a.SharedRender = func() string { return d.renderShared(id) }
	if err := a.Open(d.ctx); err != nil {
		return err
	}
	d.agents[id] = a
	d.openAgentSocket(id)
	d.attachRecorded(a)
	return nil
}

func (d *Daemon) get(id string) *agent.Agent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.agents[id]
}

// all snapshots the managed agents, sorted by id.
func (d *Daemon) all() []*agent.Agent {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*agent.Agent, 0, len(d.agents))
	for _, a := range d.agents {
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y *agent.Agent) int {
		if x.ID < y.ID {
			return -1
		}
		if x.ID > y.ID {
			return 1
		}
		return 0
	})
	return out
}

// IDs lists the managed agents.
func (d *Daemon) IDs() []string {
	all := d.all()
	ids := make([]string, len(all))
	for i, a := range all {
		ids[i] = a.ID
	}
	return ids
}

// Ready reports whether every agent has a usable work tree (SPEC §6): a
// failed start-up pull or push leaves an agent degraded, not unready; one
// never cloned stays unready.
func (d *Daemon) Ready() bool {
	for _, a := range d.all() {
		if !a.Ready() {
			return false
		}
	}
	return true
}

func (d *Daemon) pendingCommits() float64 {
	n := 0
	for _, a := range d.all() {
		n += a.Ahead()
	}
	return float64(n)
}

// mirrorLag sums the commits the agents' mirrors lack and takes the
// longest time one has been behind.
func (d *Daemon) mirrorLag() (commits, seconds float64) {
	for _, a := range d.all() {
		if n, lag, ok := mirror.Of(a).Lag(); ok {
			commits += float64(n)
			seconds = max(seconds, lag.Seconds())
		}
	}
	return commits, seconds
}

// Close stops the agents' own sockets and the watcher and closes every
// agent: pending writes committed, one push each, bounded by ctx (cancel it
// to abort the final pushes). Stop the shared HTTP servers first, so no
// request arrives at a closed agent. Close returns by ctx's end whatever
// one agent is doing (an agent stuck in its repository is left behind,
// logged): shutdown never waits on one agent forever.
func (d *Daemon) Close(ctx context.Context) {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.CloseSockets(ctx)
	d.cancel()
	if d.watcher != nil {
		d.watcher.close()
	}
	waitOrDone(ctx, d.wg.Wait)
	var wg sync.WaitGroup
	sem := make(chan struct{}, DefaultStartParallel)
	all := d.all()
	for _, u := range d.shared.all() {
		all = append(all, u.Agent)
	}
	var closingMu sync.Mutex
	closing := map[string]bool{}
	for _, a := range all {
		closing[a.ID] = true
	}
	for _, a := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			_ = a.Close(ctx)
			closingMu.Lock()
			delete(closing, a.ID)
			closingMu.Unlock()
		}()
	}
	if !waitOrDone(ctx, wg.Wait) {
		closingMu.Lock()
		left := slices.Sorted(maps.Keys(closing))
		closingMu.Unlock()
		d.log.Error("shutdown timeout reached with agents still closing; exiting without them (their commits stay local for the next start)", "agents", left)
	}
}

// waitOrDone runs wait and returns true when it returned before ctx ended.
func waitOrDone(ctx context.Context, wait func()) bool {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
