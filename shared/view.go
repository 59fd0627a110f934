package shared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/worktree"
)

// Views of a shared repository: each attached agent has a plain folder,
// <home>/agents/<id>/shared/<name> (Config.ViewDir), that its shell reads
// and writes. The shared unit owns every view of its repository: one
// goroutine (viewLoop) copies the shared tip into each view and takes
// the files an agent changed there into the unit's one pipeline, as the
// attachment's policy says. Per view it remembers the tip it copied last
// and the blob each file got (viewRecord, under the agent's records/, out
// of the agent's reach): a file that differs from what the view was given
// is the agent's write. Every act in a view goes through the folder held
// open (worktree.Dir), never by name: the agent may swap a folder in it
// for a link.

// viewRecordVersion marks the record's format.
const viewRecordVersion = 1

// viewRecord is what memfsd last gave a view.
type viewRecord struct {
	Version int    `json:"version"`
	Tip     string `json:"tip"`
	// Files maps each path to the blob the view was given ("" absent).
	Files map[string]string `json:"files"`
	// Proposed maps paths to the agent's proposed blob: the view keeps it
	// until the shared branch's version of the path changes.
	Proposed map[string]string `json:"proposed,omitempty"`
	// Held maps paths to the agent's blob a guard held (a credential,
	// broken front matter): taken again once the file changes.
	Held map[string]string `json:"held,omitempty"`
	// Notes are told at the agent's next turn (reminders).
	Notes []reminders.SharedNote `json:"notes,omitempty"`
}

// notesKept bounds a view's untold notes.
const notesKept = 50

// view is one agent's view of the shared repository.
type view struct {
	id  string
	dir string

	// busy is held by the view loop while it works on the view, and by
	// whoever reads or rewrites its record.
	busy sync.Mutex
	tree *worktree.Dir
	rec  viewRecord
	// refreshed: files memfsd replaced with the tip's version since the
	// agent last wrote them, with the version before (in memory only).
	refreshed map[string]refreshedFile

	// Under the unit's viewMu.
	write   WritePolicy
	pending map[string]bool
	full    bool // scan the whole view at the next round
	polling bool // the kernel refused watches: scanned every second
	gone    bool // detached
}

// viewSet is the unit's views.
type viewSet struct {
	mu    sync.Mutex
	m     map[string]*view // agent id → its view
	timer *time.Timer      // debounce of view writes
	kick  chan struct{}    // a round is due (tip moved, view attached)
}

func newViewSet() *viewSet {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &viewSet{m: map[string]*view{}, timer: t, kick: make(chan struct{}, 1)}
}

// viewRecordPath is agent id's record of its view of name.
func viewRecordPath(c *agent.Config, id, name string) string {
	return filepath.Join(c.Home, "agents", id, "records", "shared-view-"+name+".json")
}

// AttachView starts serving agent id's view of this shared repository
// under policy write (or changes its policy): the folder is made (0700)
// and held open, the shared tip is copied in and the folder scanned at
// the next round.
func (a *Unit) AttachView(id string, write WritePolicy) error {
	if !a.Shared() {
		return fmt.Errorf("attach view: %s is not a shared repository", a.ID)
	}
	vs := a.views
	vs.mu.Lock()
	if v := vs.m[id]; v != nil {
		v.write = write
		v.full = true
		vs.mu.Unlock()
		a.kickViews()
		return nil
	}
	vs.mu.Unlock()
	dir := a.cfg.ViewDir(id, a.ID)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("attach view %s of %s: %w", a.ID, id, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("attach view %s of %s: %w", a.ID, id, err)
	}
	tree, err := worktree.OpenDirNoFollow(dir)
	if err != nil {
		return fmt.Errorf("attach view %s of %s: the view must be a folder, not a link (remove %s and attach again): %w", a.ID, id, dir, err)
	}
	// A view has no .git: its temporary files go beside it, outside it
	// (every name inside a view may be a path of the shared tree).
	tree.SetTempDir(filepath.Join(filepath.Dir(dir), ".memfsd-tmp"))
	v := &view{id: id, dir: dir, tree: tree, write: write, pending: map[string]bool{}, full: true}
	v.rec = readViewRecord(viewRecordPath(a.cfg, id, a.ID))
	if a.viewsMovedAside.Load() {
		v.rec.Notes = append(v.rec.Notes, reminders.SharedNote{Kind: reminders.KindSharedHeadDetached})
	}
	vs.mu.Lock()
	if old := vs.m[id]; old != nil { // attached meanwhile
		vs.mu.Unlock()
		tree.Close()
		return a.AttachView(id, write)
	}
	vs.m[id] = v
	vs.mu.Unlock()
	a.kickViews()
	return nil
}

// DetachView stops serving agent id's view (its folder and record stay)
// and reports how many views are left.
func (a *Unit) DetachView(id string) int {
	vs := a.views
	if vs == nil {
		return 0
	}
	vs.mu.Lock()
	v := vs.m[id]
	delete(vs.m, id)
	n := len(vs.m)
	if v != nil {
		v.gone = true
	}
	vs.mu.Unlock()
	if v != nil {
		v.busy.Lock()
		v.tree.Close()
		v.tree = nil
		v.busy.Unlock()
	}
	return n
}

// Views counts the views served.
func (a *Unit) Views() int {
	if a.views == nil {
		return 0
	}
	a.views.mu.Lock()
	defer a.views.mu.Unlock()
	return len(a.views.m)
}

// ViewChanged records a write to rel in agent id's view (the watcher's
// event): taken once it settles (the debounce).
func (a *Unit) ViewChanged(id, rel string) {
	vs := a.views
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v := vs.m[id]; v != nil {
		v.pending[rel] = true
		vs.timer.Reset(a.Debounce)
	}
}

// ViewRescan asks for a scan of agent id's whole view (an overflow, a
// folder removed).
func (a *Unit) ViewRescan(id string) {
	vs := a.views
	vs.mu.Lock()
	if v := vs.m[id]; v != nil {
		v.full = true
	}
	vs.mu.Unlock()
	a.kickViews()
}

// ViewPolling marks agent id's view as scanned every second (the kernel
// refused watches).
func (a *Unit) ViewPolling(id string) {
	vs := a.views
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v := vs.m[id]; v != nil {
		v.polling = true
	}
}

// kickViews asks the view loop for a round (the tip moved).
func (a *Unit) kickViews() {
	if a.views == nil {
		return
	}
	select {
	case a.views.kick <- struct{}{}:
	default:
	}
}

// Run runs rounds (the view loop) until ctx ends (the unit closes): on a kick (a commit, a
// sync, an attachment), when view writes settle, and every second for
// polled views. It never waits on the network.
func (a *Unit) Run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.views.kick:
		case <-a.views.timer.C:
		case <-tick.C:
			if !a.markPolled() {
				continue
			}
		}
		a.safely("shared view", a.viewRound)
	}
}

// markPolled asks for a full scan of each polled view; false when none.
func (a *Unit) markPolled() bool {
	vs := a.views
	vs.mu.Lock()
	defer vs.mu.Unlock()
	any := false
	for _, v := range vs.m {
		if v.polling {
			v.full, any = true, true
		}
	}
	return any
}

// viewRound takes each view's settled writes into the pipeline, then
// brings every view to the shared tip.
func (a *Unit) viewRound() {
	repo := a.repository()
	if repo == nil {
		return
	}
	type work struct {
		v     *view
		write WritePolicy
		paths []string
		full  bool
	}
	vs := a.views
	vs.mu.Lock()
	list := make([]work, 0, len(vs.m))
	for _, v := range vs.m {
		w := work{v: v, write: v.write, full: v.full}
		for p := range v.pending {
			w.paths = append(w.paths, p)
		}
		clear(v.pending)
		v.full = false
		list = append(list, w)
	}
	vs.mu.Unlock()
	slices.SortFunc(list, func(x, y work) int { return strings.Compare(x.v.id, y.v.id) })
	for _, w := range list {
		if len(w.paths) == 0 && !w.full {
			continue
		}
		w.v.busy.Lock()
		if w.v.tree != nil {
			if err := a.takeView(repo, w.v, w.write, w.paths, w.full); errors.Is(err, errViewHeldForPerson) {
				a.viewHeld(w.v, w.paths, w.full)
			} else if err != nil {
				a.log.Warn("taking a view's writes failed; tried again at the next write", "view", w.v.id, "err", err)
				a.viewPending(w.v, w.paths)
			}
		}
		w.v.busy.Unlock()
	}
	head, files, err := repo.HeadFiles()
	if err != nil {
		a.log.Warn("reading the shared tip for the views failed", "err", err)
		return
	}
	for _, w := range list {
		w.v.busy.Lock()
		if w.v.tree != nil {
			again, err := a.refreshView(repo, w.v, head, files)
			if err != nil {
				a.log.Warn("copying the shared tip into a view failed; tried again at the next round", "view", w.v.id, "err", err)
			}
			a.viewPending(w.v, again)
			if err := a.saveViewRecord(w.v); err != nil {
				a.log.Warn("recording a view failed", "view", w.v.id, "err", err)
			}
		}
		w.v.busy.Unlock()
	}
}

// viewHeld queues v's paths (its whole view when full) for a round after
// the person's git operation may have ended (a poll's time).
func (a *Unit) viewHeld(v *view, paths []string, full bool) {
	a.viewPending(v, paths)
	vs := a.views
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v.full = v.full || full
	vs.timer.Reset(agent.PersonGitPoll)
}

// viewPending queues paths of v for the next round.
func (a *Unit) viewPending(v *view, paths []string) {
	if len(paths) == 0 {
		return
	}
	a.views.mu.Lock()
	defer a.views.mu.Unlock()
	for _, p := range paths {
		v.pending[p] = true
	}
	a.views.timer.Reset(a.Debounce)
}

func readViewRecord(p string) viewRecord {
	var rec viewRecord
	if data, err := os.ReadFile(p); err == nil {
		_ = json.Unmarshal(data, &rec) // damaged: start over (a full scan)
	}
	if rec.Files == nil {
		rec.Files = map[string]string{}
	}
	return rec
}

// saveViewRecord writes v's record (under v.busy).
func (a *Unit) saveViewRecord(v *view) error {
	v.rec.Version = viewRecordVersion
	if len(v.rec.Notes) > notesKept {
		v.rec.Notes = v.rec.Notes[len(v.rec.Notes)-notesKept:]
	}
	data, err := json.MarshalIndent(v.rec, "", "  ")
	if err != nil {
		return err
	}
	if err := agent.WriteRecord(viewRecordPath(a.cfg, v.id, a.ID), data); err != nil {
		return err
	}
	a.pruneViewBases(v)
	return nil
}

// ViewReminders are agent id's reminders about its view (what was undone
// or held); fetching them tells them (they are not repeated).
func (a *Unit) ViewReminders(id string) []reminders.Reminder {
	if a.views == nil {
		return nil
	}
	a.views.mu.Lock()
	v := a.views.m[id]
	a.views.mu.Unlock()
	if v == nil {
		return nil
	}
	v.busy.Lock()
	defer v.busy.Unlock()
	if len(v.rec.Notes) == 0 {
		return nil
	}
	out := reminders.Shared(a.ID, v.rec.Notes)
	v.rec.Notes = nil
	if err := a.saveViewRecord(v); err != nil {
		a.log.Warn("recording a view failed", "view", v.id, "err", err)
	}
	return out
}

// closeViews lets every view's folder go (Close, after the loops ended).
func (a *Unit) CloseViews() {
	if a.views == nil {
		return
	}
	a.views.mu.Lock()
	list := make([]*view, 0, len(a.views.m))
	for _, v := range a.views.m {
		list = append(list, v)
	}
	a.views.mu.Unlock()
	for _, v := range list {
		v.busy.Lock()
		if v.tree != nil {
			v.tree.Close()
			v.tree = nil
		}
		v.busy.Unlock()
	}
}
