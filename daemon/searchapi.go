package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/search"
)

// searchRoutes serve the tiers and the search (SPEC §11): GET .../search
// finds files, GET .../overview is a folder's L1; ?shared=NAME asks the
// same of a shared repository the agent is attached to.
func (d *Daemon) searchRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/agents/{id}/search", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		q := r.URL.Query()
		limit := 0
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > search.MaxLimit {
				writeError(w, http.StatusBadRequest, fmt.Errorf("search: query limit=%q: want a number from 1 to %d (default %d)", v, search.MaxLimit, search.DefaultLimit))
				return
			}
			limit = n
		}
		u, err := d.searchUnit(a, q.Get("shared"))
		if err != nil {
			writeSearchError(w, err)
			return
		}
		res, err := u.Search(q.Get("q"), limit)
		if err != nil {
			writeSearchError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}))
	mux.HandleFunc("GET /v1/agents/{id}/overview", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		q := r.URL.Query()
		u, err := d.searchUnit(a, q.Get("shared"))
		if err != nil {
			writeSearchError(w, err)
			return
		}
		o, err := u.Overview(q.Get("path"))
		if err != nil {
			writeSearchError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"overview": o, "text": agent.OverviewText(o)})
	}))
}

// errNoShared is a ?shared=NAME the agent is not attached to.
var errNoShared = errors.New("no such shared repository")

// searchUnit is the agent itself, or the shared repository name it is
// attached to.
func (d *Daemon) searchUnit(a *agent.Agent, name string) (*agent.Agent, error) {
	if name == "" {
		return a, nil
	}
	list, err := agent.ReadAttachments(d.cfg, a.ID)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(list, func(at agent.Attachment) bool { return at.Name == name }) {
		return nil, fmt.Errorf("search: %w %q for agent %s (GET /v1/agents/%s/shared lists them)", errNoShared, name, a.ID, a.ID)
	}
	u := d.shared.unit(name)
	if u == nil {
		return nil, fmt.Errorf("search: shared repository %q: %w", name, agent.ErrNotReady)
	}
	return u, nil
}

// writeSearchError answers 400 for the caller's input, 404 for an unknown
// shared repository, 503 before the first clone.
func writeSearchError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, agent.ErrBadSearch):
		code = http.StatusBadRequest
	case errors.Is(err, errNoShared):
		code = http.StatusNotFound
	case errors.Is(err, agent.ErrNotReady):
		code = http.StatusServiceUnavailable
	}
	writeError(w, code, err)
}
