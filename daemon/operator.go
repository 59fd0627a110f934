package daemon

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/memfsd/memfsd/agent"
)

// operatorPatterns are the routes only the admin socket serves (SPEC §6).
var operatorPatterns = []string{
	"PUT /v1/agents/{id}",
	"PUT /v1/agents/{id}/blocks/{name}",
	"POST /v1/agents/{id}/accept",
	"PUT /v1/agents/{id}/budget",
	"PUT /v1/agents/{id}/shared/{name}",
	"DELETE /v1/agents/{id}/shared/{name}",
	"PUT /v1/agents/{id}/mirror",
	"DELETE /v1/agents/{id}/mirror",
	"POST /v1/agents/{id}/mirror/push",
}

// operatorRoutes are the operator's: start managing an agent, change a
// read-only block, settle held deletions.
func (d *Daemon) operatorRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /v1/agents/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var body struct {
			RemoteURL string `json:"remote_url"`
		}
		if err := decodeBody(r, &body); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf(`PUT agent: want no body or {"remote_url": "https://..."}: %w`, err))
			return
		}
		if body.RemoteURL != "" {
			if a := d.get(id); a != nil && a.RemoteOverride() != body.RemoteURL {
				writeError(w, http.StatusConflict, fmt.Errorf("PUT agent %s: already managed with another remote; a new remote takes a restart", id))
				return
			}
			if err := agent.SetRemoteOverride(d.cfg, id, body.RemoteURL); err != nil {
				writeError(w, http.StatusBadRequest, err)
				return
			}
		}
		if err := d.Manage(id); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		// Kept: a restart manages the agent again (issue 28).
		if err := agent.RecordManaged(d.cfg, id); err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Errorf("PUT agent %s: managed now, but not recorded for a restart: %w", id, err))
			return
		}
		a := d.get(id)
		wait, err := waitParam(r, 30*time.Second)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		extendWrite(w, wait)
		waitReady(r.Context(), a, wait)
		writeJSON(w, http.StatusOK, a.Status(true))
	})
	mux.HandleFunc("PUT /v1/agents/{id}/blocks/{name}", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxToolInput+1))
		if err != nil || len(body) > maxToolInput {
			writeError(w, http.StatusBadRequest, fmt.Errorf("block set: body unreadable or over 8 MiB"))
			return
		}
		rel, err := a.SetBlock(r.PathValue("name"), body)
		if errors.Is(err, agent.ErrNotReady) {
			writeError(w, http.StatusServiceUnavailable, err)
			return
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		extendWrite(w, DefaultTurnWait)
		tr := a.Turn(r.Context().Done(), DefaultTurnWait)
		// A block set that cannot take effect says so (issue 28): the
		// path changed on the remote first (409), or it is not on the
		// remote yet after this turn (202: memfsd pushes it later).
		out := a.BlockSetOutcome(rel)
		answer := map[string]any{"path": rel, "block_set": out, "turn": tr}
		switch out.State {
		case "superseded":
			answer["error"] = fmt.Sprintf("block set %s: did not take effect: %s", rel, out.Reason)
			writeJSON(w, http.StatusConflict, answer)
		case "pending":
			why := tr.Error
			if why == "" {
				why = "turn outcome " + tr.Outcome
			}
			answer["error"] = fmt.Sprintf("block set %s: committed, not on the remote yet (%s); memfsd pushes it by itself (retried in the background; block_sets_pending in the status until it lands)", rel, why)
			writeJSON(w, http.StatusAccepted, answer)
		default:
			writeJSON(w, http.StatusOK, answer)
		}
	}))
	mux.HandleFunc("PUT /v1/agents/{id}/budget", d.withAgent(putBudget))
	d.sharedOperatorRoutes(mux)
	d.mirrorOperatorRoutes(mux)
	mux.HandleFunc("POST /v1/agents/{id}/accept", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		var opts agent.AcceptOptions
		if err := decodeBody(r, &opts); err != nil || opts.Deletes == opts.Restore {
			writeError(w, http.StatusBadRequest, errors.New(`accept: want {"deletes": true} or {"restore": true}`))
			return
		}
		res, err := a.Accept(r.Context(), opts)
		switch {
		case errors.Is(err, agent.ErrNothingHeld):
			writeError(w, http.StatusConflict, err)
			return
		case err != nil:
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		wait, err := waitParam(r, DefaultTurnWait)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		extendWrite(w, wait)
		writeJSON(w, http.StatusOK, map[string]any{"accepted": res, "turn": a.Turn(r.Context().Done(), wait)})
	}))
}
