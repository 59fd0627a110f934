package daemon

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/search"
	"github.com/memfsd/memfsd/shared"
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
	// The memory_search tool beside the memory tool: what a harness hands
	// the model as a second tool. The same input and answer as the MCP
	// tool (agent.RunSearchCall), in the memory route's shape.
	mux.HandleFunc("POST /v1/agents/{id}/memory_search", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxSearchInput+1))
		if err != nil || len(body) > maxSearchInput {
			writeJSON(w, http.StatusBadRequest, memtool.Result{Content: fmt.Sprintf("invalid input: body unreadable or over %d KiB", maxSearchInput>>10), IsError: true})
			return
		}
		c, err := agent.DecodeSearchCall(body)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, memtool.Result{Content: err.Error(), IsError: true})
			return
		}
		u, err := d.searchUnit(a, r.URL.Query().Get("shared"))
		if err != nil {
			code := http.StatusServiceUnavailable
			if errors.Is(err, errNoShared) {
				code = http.StatusNotFound
			}
			writeJSON(w, code, memtool.Result{Content: err.Error(), IsError: true})
			return
		}
		res, structured, err := u.RunSearchCall(c)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, memtool.Result{Content: u.AgentFacing(err.Error()), IsError: true})
			return
		}
		code := http.StatusOK
		if res.IsError {
			code = http.StatusBadRequest
		}
		writeJSON(w, code, searchToolAnswer{Result: res, Structured: structured})
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

// maxSearchInput bounds a memory_search request body (a query is at most
// search.MaxQueryBytes; the rest is room for the JSON around it).
const maxSearchInput = 64 << 10

// searchToolAnswer is memory_search's answer: the tool's text, and the
// hits (or the folder's overview) as data.
type searchToolAnswer struct {
	memtool.Result
	Structured any `json:"result,omitempty"`
}

// errNoShared is a ?shared=NAME the agent is not attached to.
var errNoShared = errors.New("no such shared repository")

// searchUnit is the agent itself, or the shared repository name it is
// attached to.
func (d *Daemon) searchUnit(a *agent.Agent, name string) (*agent.Agent, error) {
	if name == "" {
		return a, nil
	}
	list, err := shared.ReadAttachments(d.cfg, a.ID)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(list, func(at shared.Attachment) bool { return at.Name == name }) {
		return nil, fmt.Errorf("search: %w %q for agent %s (GET /v1/agents/%s/shared lists them)", errNoShared, name, a.ID, a.ID)
	}
	u := d.shared.unit(name)
	if u == nil {
		return nil, fmt.Errorf("search: shared repository %q: %w", name, agent.ErrNotReady)
	}
	return u.Agent, nil
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
