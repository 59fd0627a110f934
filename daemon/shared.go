package daemon

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/retry"
	"github.com/memfsd/memfsd/shared"
)

// sharedUnits are the daemon's shared repositories: one unit (one clone,
// one pipeline, one sync loop) per name, however many agents are attached.
type sharedUnits struct {
	mu       sync.Mutex
	units    map[string]*shared.Unit                 // name → its unit
	attached map[string]map[string]shared.Attachment // agent id → name → attachment
	watches  map[string]map[string]*viewWatch        // agent id → name → its view's watch
}

func (s *sharedUnits) unit(name string) *shared.Unit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.units[name]
}

// all lists the units, by name.
func (s *sharedUnits) all() []*shared.Unit {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*shared.Unit, 0, len(s.units))
	for _, u := range s.units {
		out = append(out, u)
	}
	slices.SortFunc(out, func(x, y *shared.Unit) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// attachment is agent id's attachment of name and its unit.
func (s *sharedUnits) attachment(id, name string) (*shared.Unit, shared.Attachment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.attached[id][name]
	if !ok || s.units[name] == nil {
		return nil, at, false
	}
	return s.units[name], at, true
}

// of lists agent id's attachments with their units, by name.
func (s *sharedUnits) of(id string) ([]shared.Attachment, []*shared.Unit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ats []shared.Attachment
	for _, at := range s.attached[id] {
		ats = append(ats, at)
	}
	slices.SortFunc(ats, func(x, y shared.Attachment) int { return strings.Compare(x.Name, y.Name) })
	units := make([]*shared.Unit, len(ats))
	for i, at := range ats {
		units[i] = s.units[at.Name]
	}
	return ats, units
}

// attachRecorded attaches what agent a's records list (at start-up and
// when the agent starts being managed).
func (d *Daemon) attachRecorded(a *agent.Agent) {
	list, err := shared.ReadAttachments(d.cfg, a.ID)
	if err != nil {
		d.log.Error("reading shared attachments failed; the agent runs without them", "agent", a.ID, "err", err)
		return
	}
	names := make([]string, 0, len(list))
	for _, at := range list {
		names = append(names, at.Name)
		if err := d.attachShared(a, at); err != nil {
			d.log.Error("attaching a shared repository failed", "agent", a.ID, "shared", at.Name, "err", err)
		}
	}
	// Views of repositories detached while no daemon ran.
	moved, err := shared.MoveUnattachedViews(d.cfg, a.ID, names)
	for _, to := range moved {
		d.log.Info("a view of a shared repository no longer attached was moved aside", "agent", a.ID, "moved_to", to)
	}
	if err != nil {
		d.log.Warn("moving aside views of detached shared repositories failed", "agent", a.ID, "err", err)
	}
}

// attachShared serves attachment at of agent a: the repository's unit is
// opened the first time any agent attaches it (cloned in its own sync
// loop, like an agent's memory).
func (d *Daemon) attachShared(a *agent.Agent, at shared.Attachment) error {
	s := &d.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.units == nil {
		s.units, s.attached = map[string]*shared.Unit{}, map[string]map[string]shared.Attachment{}
		s.watches = map[string]map[string]*viewWatch{}
	}
	if s.units[at.Name] == nil {
		u, err := shared.New(d.cfg, at.Name, at.RemoteURL)
		if err != nil {
			return err
		}
		u.Background = true
		u.Debounce, u.PullInterval = d.Debounce, d.PullInterval
		u.StartSlots, u.ScanSlots = d.startSlot, d.scanSlot
		u.Hooks = agent.Hooks{
			Committed: func(n int) { d.metrics.commits.Add(float64(n)) },
			Pulled:    func() { d.metrics.pulls.Inc() },
			Failed:    func(c retry.Class) { d.metrics.errors.WithLabelValues(string(c)).Inc() },
		}
		if err := u.Open(d.ctx); err != nil {
			return err
		}
		s.units[at.Name] = u
	}
	if s.attached[a.ID] == nil {
		s.attached[a.ID] = map[string]shared.Attachment{}
		s.watches[a.ID] = map[string]*viewWatch{}
	}
	s.attached[a.ID][at.Name] = at
	// The agent's view folder: made, copied into and watched.
	u := s.units[at.Name]
	if err := u.AttachView(a.ID, at.Write); err != nil {
		return err
	}
	if s.watches[a.ID][at.Name] == nil && d.watcher != nil {
		vw := &viewWatch{unit: u, id: a.ID}
		s.watches[a.ID][at.Name] = vw
		d.watcher.add(vw, d.cfg.ViewDir(a.ID, at.Name))
	}
	return nil
}

// detachShared stops serving a's attachment of name: its view is no
// longer watched or copied into, and its folder is moved aside
// (shared.MoveDetachedView). The last attachment
// of name going stops its unit (pending commits pushed once, bounded by
// DefaultShutdownTimeout; the clone stays for a later attach).
func (d *Daemon) detachShared(a *agent.Agent, name string) {
	s := &d.shared
	s.mu.Lock()
	delete(s.attached[a.ID], name)
	if vw := s.watches[a.ID][name]; vw != nil {
		delete(s.watches[a.ID], name)
		if d.watcher != nil {
			d.watcher.remove(vw)
		}
	}
	u := s.units[name]
	if u != nil {
		u.DetachView(a.ID)
	}
	// The view folder would keep the shared files and take writes to
	// nowhere: moved aside, the agent told (under s.mu: an attach of the
	// same name waits, then makes the view again).
	if to, err := shared.MoveDetachedView(d.cfg, a.ID, name); err != nil {
		d.log.Warn("moving the detached view aside failed", "agent", a.ID, "shared", name, "err", err)
	} else if to != "" {
		d.log.Info("the detached view was moved aside", "agent", a.ID, "shared", name, "moved_to", to)
	}
	last := u != nil
	for _, ats := range s.attached {
		if _, ok := ats[name]; ok {
			last = false
		}
	}
	if last {
		delete(s.units, name)
	}
	s.mu.Unlock()
	if last {
		ctx, cancel := context.WithTimeout(d.ctx, DefaultShutdownTimeout)
		defer cancel()
		if err := u.Close(ctx); err != nil {
			d.log.Warn("stopping a detached shared repository: its final push failed; the commits stay in its clone for a later attach", "shared", name, "err", err)
		}
	}
}

// sharedReminders are agent id's reminders about its views.
func (d *Daemon) sharedReminders(id string) []reminders.Reminder {
	ats, units := d.shared.of(id)
	out := shared.DetachedViewReminders(d.cfg, id)
	for i, u := range units {
		if u == nil {
			continue
		}
		out = append(out, u.ViewReminders(id)...)
		if ats[i].Write == shared.WritePropose {
			var pending []reminders.PendingProposal
			for _, p := range u.PendingProposals(id) {
				pending = append(pending, reminders.PendingProposal{Branch: p.Branch, Paths: p.Paths})
			}
			out = append(out, reminders.Proposals(u.ID, pending)...)
		}
	}
	return out
}

// renderShared is agent id's shared repositories as its context shows them.
func (d *Daemon) renderShared(id string) string {
	ats, units := d.shared.of(id)
	var b strings.Builder
	for i, at := range ats {
		if units[i] == nil {
			continue
		}
		text, err := units[i].SharedContext(at.Write)
		if err != nil {
			text = "\n<shared_memory name=\"" + at.Name + "\">not available yet: " + err.Error() + "</shared_memory>"
		}
		b.WriteString(text)
	}
	return b.String()
}

// turnAnswer is a turn's answer: the agent's own sync, and each attached
// shared repository's.
type turnAnswer struct {
	agent.TurnResult
	Shared map[string]agent.TurnResult `json:"shared,omitempty"`
}

// turn syncs agent a and its shared repositories (their units' turns run
// beside the agent's; turns of several agents on one unit share a sync).
func (d *Daemon) turn(done <-chan struct{}, a *agent.Agent, wait time.Duration) turnAnswer {
	ats, units := d.shared.of(a.ID)
	results := make([]agent.TurnResult, len(units))
	var wg sync.WaitGroup
	for i, u := range units {
		if u == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = u.Turn(done, wait)
		}()
	}
	out := turnAnswer{TurnResult: a.Turn(done, wait)}
	wg.Wait()
	for i, at := range ats {
		if units[i] == nil {
			continue
		}
		if out.Shared == nil {
			out.Shared = map[string]agent.TurnResult{}
		}
		out.Shared[at.Name] = results[i]
	}
	return out
}
