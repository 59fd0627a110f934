package daemon

import "net/http"

// memoryRoutes serves the agent's surface: the memory tool and reminders.
func (d *Daemon) memoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/agents/{id}/memory", d.withAgent(func(w http.ResponseWriter, r *http.Request, m *managed) {
		writeError(w, http.StatusNotImplemented, errNotImplemented)
	}))
}
