package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/shared"
	"github.com/memfsd/memfsd/worktree"
)

// watched is what a watched folder belongs to: an agent's memory folder
// (*agent.Agent) or an agent's view of a shared repository (*viewWatch).
type watched interface {
	Changed(rel string)
	Rescan()
	SetPolling()
}

// viewWatch is agent id's view of a shared unit, as the watcher sees it.
type viewWatch struct {
	unit *shared.Unit
	id   string
}

func (v *viewWatch) Changed(rel string) { v.unit.ViewChanged(v.id, rel) }
func (v *viewWatch) Rescan()            { v.unit.ViewRescan(v.id) }
func (v *viewWatch) SetPolling()        { v.unit.ViewPolling(v.id) }

// watchName names m in logs.
func watchName(m watched) []any {
	switch m := m.(type) {
	case *agent.Agent:
		return []any{"agent", m.ID}
	case *viewWatch:
		return []any{"agent", m.id, "shared", m.unit.ID}
	}
	return nil
}

// watcher is one inotify instance for every agent (an instance per agent
// stops at fs.inotify.max_user_instances, 128 here): one watch per folder,
// memory folders and shared views alike.
type watcher struct {
	w   *fsnotify.Watcher
	log *slog.Logger

	mu    sync.Mutex
	dirs  map[string]watched // watched folder → its owner
	roots map[watched]string
}

func newWatcher(log *slog.Logger) (*watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return &watcher{w: w, log: log, dirs: map[string]watched{}, roots: map[watched]string{}}, nil
}

func (wt *watcher) close() { wt.w.Close() }

// add watches root and every folder below it (not .git). When the kernel
// refuses more watches the agent falls back to polling.
func (wt *watcher) add(m watched, root string) {
	wt.mu.Lock()
	wt.roots[m] = root
	wt.mu.Unlock()
	if err := wt.addTree(m, root, false); err != nil {
		wt.fallback(m, err)
	}
}

func (wt *watcher) fallback(m watched, err error) {
	limit := "fs.inotify.max_user_watches"
	if errors.Is(err, syscall.EMFILE) {
		limit = "fs.inotify.max_user_instances"
	}
	wt.log.Warn("inotify limit hit: polling this folder every second instead", append(watchName(m), "limit", limit, "err", err)...)
	m.SetPolling()
}

// addTree adds watches below dir; with queueFiles, the files found are
// queued too (they may have been written before the watch existed).
func (wt *watcher) addTree(m watched, dir string, queueFiles bool) error {
	root := wt.rootOf(m)
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone already
		}
		if rel, ok := relPath(root, p); ok && rel != "" {
			if skip, why := worktree.Skip(rel, d.IsDir()); skip {
				// Not a memory path (a .git below the root, ...): not
				// watched; handed on so the pipeline tells the agent.
				if why != "" && queueFiles {
					m.Changed(rel)
				}
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		} else if !ok && p != root {
			if d.IsDir() {
				return filepath.SkipDir // the repository's own .git
			}
			return nil
		}
		if d.IsDir() {
			if err := wt.w.Add(p); err != nil {
				if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
					return err
				}
				return nil
			}
			wt.mu.Lock()
			wt.dirs[p] = m
			wt.mu.Unlock()
			return nil
		}
		if queueFiles {
			if rel, ok := relPath(root, p); ok {
				m.Changed(rel)
			}
		}
		return nil
	})
}

func (wt *watcher) rootOf(m watched) string {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.roots[m]
}

func (wt *watcher) remove(m watched) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	for d, owner := range wt.dirs {
		if owner == m {
			_ = wt.w.Remove(d)
			delete(wt.dirs, d)
		}
	}
	delete(wt.roots, m)
}

// run hands events to their agents until ctx ends or the watcher closes.
func (wt *watcher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wt.w.Events:
			if !ok {
				return
			}
			wt.handle(ev)
		case err, ok := <-wt.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				wt.log.Warn("inotify queue overflowed (fs.inotify.max_queued_events): scanning every agent")
				wt.mu.Lock()
				var all []watched
				for m := range wt.roots {
					all = append(all, m)
				}
				wt.mu.Unlock()
				for _, m := range all {
					m.Rescan() // coalesced; the scans run with bounded concurrency
				}
				continue
			}
			wt.log.Warn("watch error", "err", err)
		}
	}
}

func (wt *watcher) handle(ev fsnotify.Event) {
	wt.mu.Lock()
	m := wt.dirs[filepath.Dir(ev.Name)]
	_, isWatchedDir := wt.dirs[ev.Name]
	if m == nil {
		m = wt.dirs[ev.Name]
	}
	root := wt.roots[m]
	wt.mu.Unlock()
	if m == nil {
		return
	}
	rel, ok := relPath(root, ev.Name)
	if !ok {
		return
	}
	switch {
	case ev.Has(fsnotify.Create):
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			if err := wt.addTree(m, ev.Name, true); err != nil {
				wt.fallback(m, err)
			}
			return
		}
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		if isWatchedDir {
			wt.mu.Lock()
			for d := range wt.dirs {
				if d == ev.Name || strings.HasPrefix(d, ev.Name+string(filepath.Separator)) {
					delete(wt.dirs, d)
				}
			}
			wt.mu.Unlock()
			m.Rescan() // the files below it went with it
			return
		}
	}
	if rel == "" {
		return
	}
	m.Changed(rel)
}

// relPath is p relative to root as a slash path; false for the
// repository's own .git (and below, memfsd's temporary files included)
// and anything outside root. A path below another untrackable folder (a .git below
// the root, in any case) is that folder: the pipeline skips it and tells
// the agent once, whatever is written inside.
func relPath(root, p string) (string, bool) {
	if root == "" || !strings.HasPrefix(p, root) {
		return "", false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, root), string(filepath.Separator))
	rel = filepath.ToSlash(rel)
	if rel == "" {
		return "", true
	}
	var pe *worktree.PathError
	if !errors.As(worktree.Check(rel), &pe) {
		return rel, true
	}
	if pe.Silent {
		return "", false
	}
	return pe.Prefix, true
}

// WatchAgent watches agent a's memory folder as a daemon does (inotify; a
// rescan every second when the kernel refuses watches), for a process
// that runs one agent without a daemon (`memfsd mcp`): a direct write is
// committed after the agent's debounce, not at its next push. Call it
// before a.Open (it sets a.OnReady); stop ends the watch.
func WatchAgent(a *agent.Agent, log *slog.Logger) (stop func(), err error) {
	w, err := newWatcher(log)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", a.ID, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.run(ctx) }()
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if a.Polling() {
				a.Rescan()
			}
		}
	}()
	a.OnReady = func() { w.add(a, a.Dir()) }
	return func() { cancel(); w.close(); wg.Wait() }, nil
}
