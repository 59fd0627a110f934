package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/retry"
)

// historyRoutes serve the memory's history as the agent sees it (SPEC §9):
// the commits that changed a path, and a file at a revision, read from
// the repository without a git binary.
func (d *Daemon) historyRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/agents/{id}/history", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		q := r.URL.Query()
		limit := 0
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > agent.MaxHistoryLimit {
				writeError(w, http.StatusBadRequest, fmt.Errorf("history: query limit=%q: want a number from 1 to %d (default %d)", v, agent.MaxHistoryLimit, agent.DefaultHistoryLimit))
				return
			}
			limit = n
		}
		h, err := a.History(q.Get("path"), limit)
		if err != nil {
			writeHistoryError(w, err, nil)
			return
		}
		writeJSON(w, http.StatusOK, h)
	}))
	mux.HandleFunc("GET /v1/agents/{id}/file", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		q := r.URL.Query()
		path, rev := q.Get("path"), q.Get("rev")
		if path == "" {
			writeError(w, http.StatusBadRequest, errors.New("file: query path is required (a file relative to the memory folder, e.g. system/human.md)"))
			return
		}
		f, err := a.FileAt(path, rev)
		if err != nil {
			if rev == "" {
				rev = "HEAD"
			}
			// letta-code's failure shape: file_path and ref say what was
			// asked, content null (and a client tells this 404 from an
			// unmanaged agent's, which has neither).
			writeHistoryError(w, err, map[string]any{"file_path": path, "ref": rev, "content": nil})
			return
		}
		writeJSON(w, http.StatusOK, f)
	}))
}

// writeHistoryError answers a history or file error: 400 for the caller's
// input, 404 for a file absent at the revision, 503 before the first clone.
func writeHistoryError(w http.ResponseWriter, err error, extra map[string]any) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, agent.ErrBadHistoryInput):
		code = http.StatusBadRequest
	case errors.Is(err, agent.ErrNoFileAtRef):
		code = http.StatusNotFound
	case errors.Is(err, agent.ErrNotReady):
		code = http.StatusServiceUnavailable
	case errors.Is(err, agent.ErrStuck):
		code = http.StatusServiceUnavailable
	}
	body := map[string]any{"error": err.Error()}
	if errors.Is(err, agent.ErrStuck) {
		body["next_step"] = retry.NextStep(err)
	}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, code, body)
}
