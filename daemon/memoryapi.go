package daemon

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
)

// maxToolInput bounds a memory-tool request body.
const maxToolInput = 8 << 20

// memoryRoutes serves the agent's surface: the memory tool, reminders, and
// the operator's block changes.
func (d *Daemon) memoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/agents/{id}/memory", d.withAgent(func(w http.ResponseWriter, r *http.Request, m *managed) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxToolInput+1))
		if err != nil || len(body) > maxToolInput {
			writeJSON(w, http.StatusBadRequest, memtool.Result{Content: "invalid input: body unreadable or over 8 MiB", IsError: true})
			return
		}
		in, err := memtool.Decode(body)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, memtool.Result{Content: "invalid input: " + err.Error(), IsError: true})
			return
		}
		a := m.agent()
		if a == nil {
			writeJSON(w, http.StatusServiceUnavailable, memtool.Result{Content: "memory is not available yet: the agent's first sync has not succeeded", IsError: true})
			return
		}
		res := a.MemoryTool(&m.writeMu).Run(in)
		if !res.IsError && in.Command != "view" {
			d.metrics.commits.Inc()
		}
		writeJSON(w, http.StatusOK, res)
	}))
	mux.HandleFunc("GET /v1/agents/{id}/reminders", d.withAgent(func(w http.ResponseWriter, r *http.Request, m *managed) {
		rs := m.reminders()
		writeJSON(w, http.StatusOK, map[string]any{"reminders": rs, "text": reminders.Text(rs)})
	}))
	mux.HandleFunc("PUT /v1/agents/{id}/blocks/{name}", d.withAgent(func(w http.ResponseWriter, r *http.Request, m *managed) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxToolInput+1))
		if err != nil || len(body) > maxToolInput {
			writeError(w, http.StatusBadRequest, fmt.Errorf("block set: body unreadable or over 8 MiB"))
			return
		}
		a := m.agent()
		if a == nil {
			writeError(w, http.StatusServiceUnavailable, fmt.Errorf("block set: the agent's first sync has not succeeded"))
			return
		}
		m.writeMu.Lock()
		rel, err := a.SetBlock(r.PathValue("name"), body)
		m.writeMu.Unlock()
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		tr := m.turn(DefaultTurnWait)
		writeJSON(w, http.StatusOK, map[string]any{"path": rel, "turn": tr})
	}))
}

// reminders builds the agent's reminders from its status; fetching them
// marks a read-only rejection as told.
func (m *managed) reminders() []reminders.Reminder {
	st := m.status()
	rs := reminders.Build(stateForReminders(st), time.Now())
	m.mu.Lock()
	if len(m.rejected) > 0 {
		m.rejSeen = true
	}
	m.mu.Unlock()
	return rs
}

func stateForReminders(st Status) reminders.State {
	rs := reminders.State{
		Agent:            st.Agent,
		Conflicts:        st.Conflicts,
		Ahead:            st.Ahead,
		ReadOnlyRejected: st.ReadOnlyRejected,
		HeldDeletes:      st.HeldDeletes,
		Backups:          st.Backups,
	}
	if st.LastError != nil {
		rs.ErrorClass, rs.ErrorMessage, rs.Attempts = st.LastError.Class, st.LastError.Message, st.LastError.Attempts
	}
	return rs
}

// OfflineReminders are the reminders read from disk, with no daemon.
func OfflineReminders(st Status) []reminders.Reminder {
	return reminders.Build(stateForReminders(st), time.Now())
}
