package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/mirror"
)

// DefaultMirrorPushWait is how long POST .../mirror/push waits for the
// push by default (?wait= changes it).
const DefaultMirrorPushWait = 30 * time.Second

// mirrorRoutes: anyone on the agent's socket may read the mirror's status
// (its URL redacted); only the operator sets, unsets or pushes it — a
// mirror URL the agent could choose would copy its memory anywhere.
func (d *Daemon) mirrorRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/agents/{id}/mirror", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		writeJSON(w, http.StatusOK, map[string]any{"mirror": mirror.Of(a).Status(true)})
	}))
}

// mirrorOperatorRoutes are the operator's: PUT {"url": ...} sets the
// agent's mirror (and pushes to it at once), DELETE turns it off, POST
// .../mirror/push pushes now ({"force": true} overwrites a mirror that has
// commits the primary does not).
func (d *Daemon) mirrorOperatorRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /v1/agents/{id}/mirror", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		var body struct {
			URL string `json:"url"`
		}
		if err := decodeBody(r, &body); err != nil || body.URL == "" {
			if err == nil {
				err = errors.New("no url")
			}
			writeError(w, http.StatusBadRequest, fmt.Errorf(`mirror set: want {"url": "https://host/path.git"}: %w`, err))
			return
		}
		if err := mirror.Of(a).Set(body.URL); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("mirror set %s: %w", a.ID, err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"mirror": mirror.Of(a).Status(true)})
	}))
	mux.HandleFunc("DELETE /v1/agents/{id}/mirror", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		if err := mirror.Of(a).Unset(); err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Errorf("mirror unset %s: %w", a.ID, err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"mirror": mirror.Of(a).Status(true)})
	}))
	mux.HandleFunc("POST /v1/agents/{id}/mirror/push", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		var body struct {
			Force bool `json:"force"`
		}
		if err := decodeBody(r, &body); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf(`mirror push: want no body or {"force": true}: %w`, err))
			return
		}
		wait, err := waitParam(r, DefaultMirrorPushWait)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		extendWrite(w, wait)
		e, finished, err := mirror.Of(a).PushNow(r.Context().Done(), wait, body.Force)
		switch {
		case errors.Is(err, mirror.ErrNoMirror):
			writeError(w, http.StatusConflict, err)
			return
		case !finished:
			writeJSON(w, http.StatusAccepted, map[string]any{"finished": false, "mirror": mirror.Of(a).Status(false)})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"finished": true, "push": e, "mirror": mirror.Of(a).Status(false)})
	}))
}
