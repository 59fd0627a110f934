package daemon

import (
	"os"
	"path/filepath"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// status reads the agent's repo and combines it with the daemon's record of
// errors, held deletions and rejected writes.
func (m *managed) status() Status {
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
	st.ReadOnlyRejected = append([]string(nil), m.rejected...)
	m.mu.Unlock()

	repoErr := false
	if a != nil {
		if _, err := os.Stat(filepath.Join(a.Repo.GitDir, "HEAD")); err != nil {
			repoErr = true
		} else if rs, err := a.Repo.Status(); err == nil {
			st.Head, st.RemoteHead = hashString(rs.Head), hashString(rs.RemoteHead)
			st.Ahead, st.Behind = rs.Ahead, rs.Behind
			for _, d := range rs.Dirty {
				st.Dirty = append(st.Dirty, d.Path)
			}
			if files, err := a.Repo.TrackedFiles(); err == nil {
				for _, f := range files {
					if gitmem.IsConflictCopy(f) {
						st.Conflicts = append(st.Conflicts, f)
					}
				}
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
