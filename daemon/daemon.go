// Package daemon is `memfsd run`: it manages agents (clone or pull at
// start, a commit per settled write, a sync per turn), serves the HTTP API,
// and shuts down with a bounded final push.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/memfsd/memfsd/agent"
)

// Defaults of the daemon's settings.
const (
	DefaultDebounce        = 150 * time.Millisecond
	DefaultShutdownTimeout = 10 * time.Second
	DefaultTurnWait        = 8 * time.Second
	// DefaultStartParallel bounds agents opening at once at start-up.
	DefaultStartParallel = 8
)

// Daemon manages agents and serves the API.
type Daemon struct {
	Debounce     time.Duration
	PullInterval time.Duration // 0 = no fetch between turns

	cfg      *agent.Config
	log      *slog.Logger
	metrics  *metrics
	watcher  *watcher
	startSem chan struct{}

	mu       sync.Mutex
	agents   map[string]*managed
	closed   bool
	pollStop chan struct{}
}

// New makes a daemon over cfg (validated).
func New(cfg *agent.Config) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Daemon{
		Debounce: DefaultDebounce,
		cfg:      cfg,
		log:      cfg.Logger,
		agents:   map[string]*managed{},
		startSem: make(chan struct{}, DefaultStartParallel),
	}
	d.metrics = newMetrics(d.pendingCommits, func() float64 {
		d.mu.Lock()
		defer d.mu.Unlock()
		return float64(len(d.agents))
	})
	w, err := newWatcher(d.log)
	if err != nil {
		return nil, fmt.Errorf("start watcher: %w", err)
	}
	d.watcher = w
	d.pollStop = make(chan struct{})
	go d.pollLoop()
	return d, nil
}

// pollLoop scans, once a second, the agents whose folders could not be
// watched (inotify limits). One ticker for the daemon: a thousand idle
// agents cost no wake-ups.
func (d *Daemon) pollLoop() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.pollStop:
			return
		case <-t.C:
		}
		d.mu.Lock()
		var due []*managed
		for _, m := range d.agents {
			m.mu.Lock()
			if m.polling {
				due = append(due, m)
			}
			m.mu.Unlock()
		}
		d.mu.Unlock()
		for _, m := range due {
			m.scanAll()
		}
	}
}

// Manage starts managing an agent (idempotent): clone or open, commit what
// is uncommitted, push, watch.
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
	m := newManaged(d, id)
	d.agents[id] = m
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		d.startSem <- struct{}{}
		m.startup()
		<-d.startSem
		m.loop()
	}()
	return nil
}

func (d *Daemon) get(id string) *managed {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.agents[id]
}

// all snapshots the managed agents.
func (d *Daemon) all() []*managed {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*managed, 0, len(d.agents))
	for _, m := range d.agents {
		out = append(out, m)
	}
	return out
}

// IDs lists the managed agents.
func (d *Daemon) IDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.agents))
	for id := range d.agents {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Ready reports whether every agent finished its start-up sync.
func (d *Daemon) Ready() bool {
	all := d.all()
	for _, m := range all {
		m.mu.Lock()
		r := m.ready
		m.mu.Unlock()
		if !r {
			return false
		}
	}
	return true
}

// watch starts watching an agent's folder.
func (d *Daemon) watch(m *managed) {
	d.watcher.add(m, d.cfg.MemoryDir(m.id))
}

// guardReadOnly undoes a direct write to a read-only block; true when the
// path was handled (not to be committed).
func (d *Daemon) guardReadOnly(m *managed, path, kind string) bool {
	a := m.agent()
	undone, err := a.GuardDirectWrite(path)
	if err != nil {
		m.log.Error("read-only check failed; not committing the path", "path", path, "err", err)
		return true
	}
	if undone {
		m.mu.Lock()
		if !slices.Contains(m.rejected, path) {
			m.rejected = append(m.rejected, path)
		}
		m.rejSeen = false
		m.mu.Unlock()
	}
	return undone
}

func (d *Daemon) pendingCommits() float64 {
	all := d.all()
	n := 0
	for _, m := range all {
		if a := m.agent(); a != nil {
			if st, err := a.Repo.Position(); err == nil {
				n += st.Ahead
			}
		}
	}
	return float64(n)
}

// Close stops watching, commits pending writes and pushes every agent,
// bounded by ctx (cancel it to abort the final pushes).
func (d *Daemon) Close(ctx context.Context) {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	all := d.all()
	close(d.pollStop)
	d.watcher.close()
	var wg sync.WaitGroup
	sem := make(chan struct{}, DefaultStartParallel)
	for _, m := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			m.close(ctx)
		}()
	}
	wg.Wait()
}
