package daemon

import (
	"fmt"
	"net/http"

	"github.com/memfsd/memfsd/agent"
)

// budgetRoutes serve the pinned memory's token budget (SPEC §9): anyone on
// the agent's socket may read it; only the operator sets it.
func (d *Daemon) budgetRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/agents/{id}/budget", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		b, err := a.Budget()
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, err)
			return
		}
		writeJSON(w, http.StatusOK, b)
	}))
}

// putBudget is the operator's PUT /v1/agents/{id}/budget {"tokens": N}:
// N from 1 up sets the agent's budget, 0 or null drops the setting (the
// policy file's or the default applies again). It answers the budget now.
func putBudget(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
	var body struct {
		Tokens *int `json:"tokens"`
	}
	if err := decodeBody(r, &body); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf(`budget: want {"tokens": N} (0 or null drops the setting): %w`, err))
		return
	}
	n := 0
	if body.Tokens != nil {
		n = *body.Tokens
	}
	if err := a.SetBudget(n); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	b, err := a.Budget()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}
