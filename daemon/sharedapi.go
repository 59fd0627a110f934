package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/shared"
)

// sharedRoutes list an agent's shared repositories (the agent may read
// which it has); attaching and detaching are the operator's
// (sharedOperatorRoutes).
func (d *Daemon) sharedRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/agents/{id}/shared", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		list, err := d.sharedList(a.ID)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"shared": list})
	}))
}

// sharedOperatorRoutes are PUT (attach, or change the policy) and DELETE
// (detach) of /v1/agents/{id}/shared/{name}, on the admin socket only.
func (d *Daemon) sharedOperatorRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /v1/agents/{id}/shared/{name}", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		var body struct {
			Write     string `json:"write"`
			RemoteURL string `json:"remote_url"`
		}
		if err := decodeBody(r, &body); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf(`shared attach: want {"write": "allow|propose|deny", "remote_url": "https://..." (optional)}: %w`, err))
			return
		}
		at, err := shared.Attach(d.cfg, a.ID, shared.Attachment{Name: r.PathValue("name"), Write: shared.WritePolicy(body.Write), RemoteURL: body.RemoteURL})
		switch {
		case errors.Is(err, shared.ErrSharedRemoteConflict):
			writeError(w, http.StatusConflict, err)
			return
		case err != nil:
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if err := d.attachShared(a, at); err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		// Like PUT /v1/agents/{id}: answer once the clone is usable (or
		// at wait; the clone goes on in the unit's sync loop).
		wait, err := waitParam(r, 30*time.Second)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		extendWrite(w, wait)
		waitReady(r.Context(), d.shared.unit(at.Name).Agent, wait)
		writeJSON(w, http.StatusOK, d.sharedInfo(a.ID, at))
	}))
	mux.HandleFunc("DELETE /v1/agents/{id}/shared/{name}", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		name := r.PathValue("name")
		found, err := shared.Detach(d.cfg, a.ID, name)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if !found {
			writeError(w, http.StatusNotFound, fmt.Errorf("shared detach %s: agent %s has no shared repository of that name (GET /v1/agents/%s/shared lists them)", name, a.ID, a.ID))
			return
		}
		d.detachShared(a, name)
		writeJSON(w, http.StatusOK, map[string]any{"detached": name})
	}))
}

// SharedInfo is one attachment as the API shows it.
type SharedInfo struct {
	shared.Attachment
	// View is the agent's folder of the repository.
	View string `json:"view"`
	// Status is the shared clone's state (nil until it is open).
	Status *agent.Status `json:"status,omitempty"`
	// Proposals are the agent's proposals (write: propose), for the
	// operator to merge with plain git.
	Proposals []shared.Proposal `json:"proposals,omitempty"`
	// Pending are the branches of the proposals not merged yet.
	Pending []string `json:"pending_proposals,omitempty"`
}

func (d *Daemon) sharedList(id string) ([]SharedInfo, error) {
	list, err := shared.ReadAttachments(d.cfg, id)
	if err != nil {
		return nil, err
	}
	out := make([]SharedInfo, 0, len(list))
	for _, at := range list {
		out = append(out, d.sharedInfo(id, at))
	}
	return out, nil
}

func (d *Daemon) sharedInfo(id string, at shared.Attachment) SharedInfo {
	at.RemoteURL = agent.RedactURL(at.RemoteURL)
	info := SharedInfo{Attachment: at, View: d.cfg.ViewDir(id, at.Name)}
	if u := d.shared.unit(at.Name); u != nil {
		st := u.Status(false)
		info.Status = &st
		for _, pr := range u.Proposals() {
			if pr.Agent == id {
				info.Proposals = append(info.Proposals, pr)
			}
		}
		for _, pr := range u.PendingProposals(id) {
			info.Pending = append(info.Pending, pr.Branch)
		}
	}
	return info
}
