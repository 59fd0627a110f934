package daemon

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// status reads the agent's repo, scanning the work tree for dirty paths,
// and combines it with the daemon's record of errors, held deletions and
// rejected writes.
func (m *managed) status() Status { return m.statusOf(true) }

// statusOf with scan false takes the dirty paths from the watcher's pending
// writes instead of walking the work tree: the turn's answer, whose cost
// must not grow with the number of files.
func (m *managed) statusOf(scan bool) Status {
	cfg := m.d.cfg
	st := Status{
		Agent:     m.id,
		Dir:       cfg.MemoryDir(m.id),
		Remote:    agent.RedactURL(cfg.RemoteURL(m.id)),
		Branch:    gitmem.DefaultBranch,
		Dirty:     []string{},
		Conflicts: []string{},
		Backups:   []string{},
	}
	m.mu.Lock()
	a := m.a
	st.Ready = m.ready
	if m.lastErr != nil {
		e := *m.lastErr
		st.LastError = &e
	}
	if !m.lastPush.IsZero() {
		t := m.lastPush.UTC()
		st.LastPushAt = &t
	}
	held := append([]string(nil), m.held...)
	pending := make([]string, 0, len(m.pending))
	for p := range m.pending {
		pending = append(pending, p)
	}
	st.ReadOnlyRejected = append([]string(nil), m.rejected...)
	m.mu.Unlock()

	repoErr := false
	if a != nil {
		if _, err := os.Stat(filepath.Join(a.Repo.GitDir, "HEAD")); err != nil {
			repoErr = true
		} else if rs, err := repoStatus(a.Repo, scan); err == nil {
			st.Head, st.RemoteHead = hashString(rs.Head), hashString(rs.RemoteHead)
			st.Ahead, st.Behind = rs.Ahead, rs.Behind
			if scan {
				for _, d := range rs.Dirty {
					st.Dirty = append(st.Dirty, d.Path)
				}
			} else {
				slices.Sort(pending)
				st.Dirty = append(st.Dirty, pending...)
			}
			if c, err := a.Repo.ConflictCopies(); err == nil && c != nil {
				st.Conflicts = c
			}
			if b, err := a.Repo.Backups(); err == nil && b != nil {
				st.Backups = b
			}
		} else {
			repoErr = true
		}
	}
	// Held deletions still count while the files are still missing.
	for _, p := range held {
		if _, err := os.Lstat(filepath.Join(st.Dir, filepath.FromSlash(p))); err != nil {
			st.HeldDeletes = append(st.HeldDeletes, p)
		}
	}
	if len(held) > 0 && len(st.HeldDeletes) == 0 {
		m.mu.Lock()
		m.held = nil
		m.mu.Unlock()
	}
	st.State = stateOf(st, a == nil || repoErr)
	return st
}

func repoStatus(r *gitmem.Repo, scan bool) (gitmem.Status, error) {
	if scan {
		return r.Status()
	}
	return r.Position()
}

func stateOf(st Status, broken bool) string {
	switch {
	case broken, len(st.HeldDeletes) > 0:
		return StateError
	case st.LastError != nil:
		switch retry.Class(st.LastError.Class) {
		case retry.ClassAuth, retry.ClassNotFound, retry.ClassPermanent:
			return StateError
		}
		return StateDegraded
	case len(st.Conflicts) > 0:
		return StateConflict
	case len(st.Dirty) > 0:
		return StateDirty
	case st.Ahead > 0 || st.Behind > 0:
		return StateAhead
	}
	return StateClean
}

func hashString(h interface {
	IsZero() bool
	String() string
}) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// OfflineStatus reads an agent's status from disk, with no daemon.
func OfflineStatus(cfg *agent.Config, id string) (Status, error) {
	d := &Daemon{cfg: cfg, log: cfg.Logger}
	m := newManaged(d, id)
	m.ready = true
	r, err := gitmem.Open(cfg.MemoryDir(id), gitmem.Remote{URL: cfg.RemoteURL(id)}, gitmem.Options{Logger: cfg.Logger})
	if err != nil {
		return Status{}, err
	}
	defer r.Close()
	m.a = &agent.Agent{ID: id, Repo: r}
	return m.status(), nil
}
