package daemon

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
)

// maxToolInput bounds a memory-tool request body.
const maxToolInput = 8 << 20

// memoryRoutes serves the agent's surface: the memory tool and reminders.
func (d *Daemon) memoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/agents/{id}/memory", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxToolInput+1))
		if err != nil || len(body) > maxToolInput {
			writeJSON(w, http.StatusBadRequest, memtool.Result{Content: "invalid input: body unreadable or over 8 MiB", IsError: true})
			return
		}
		// The dialect and tool may come as query parameters (what the CLI's
		// --dialect and --tool send) or in the body.
		dialect, err := memtool.ParseDialect(r.URL.Query().Get("dialect"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, memtool.Result{Content: "invalid input: query parameter " + err.Error(), IsError: true})
			return
		}
		in, err := memtool.DecodeCall(body, dialect, r.URL.Query().Get("tool"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, memtool.Result{Content: "invalid input: " + err.Error(), IsError: true})
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if _, ok := r.Header["Idempotency-Key"]; ok {
			if err := agent.ValidIdempotencyKey(key); err != nil {
				writeJSON(w, http.StatusBadRequest, memtool.Result{Content: "invalid input: header Idempotency-Key: " + err.Error(), IsError: true})
				return
			}
		}
		var res memtool.Result
		if name := r.URL.Query().Get("shared"); name != "" {
			// The agent's shared repository name: /memories is its clone.
			u, at, ok := d.shared.attachment(a.ID, name)
			if !ok {
				writeJSON(w, http.StatusNotFound, memtool.Result{Content: fmt.Sprintf("shared repository %q is not attached to agent %s (GET /v1/agents/%s/shared lists them)", name, a.ID, a.ID), IsError: true})
				return
			}
			if key != "" {
				writeJSON(w, http.StatusBadRequest, memtool.Result{Content: "invalid input: Idempotency-Key is not taken for a shared repository's call", IsError: true})
				return
			}
			res, err = u.SharedCall(in, a.ID, at.Write)
			if err != nil {
				// The agent reads it: no host path (the shared clone's
				// folder is /memories in a shared call).
				err = errors.New(u.AgentFacing(err.Error()))
			}
		} else {
			res, err = a.RunCall(in, key)
		}
		var reused *agent.KeyReusedError
		if errors.As(err, &reused) {
			writeJSON(w, http.StatusConflict, memtool.Result{Content: err.Error(), IsError: true})
			return
		}
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, memtool.Result{Content: a.AgentFacing(err.Error()), IsError: true})
			return
		}
		if !res.IsError && in.Writes() {
			d.metrics.commits.Inc()
		}
		writeJSON(w, http.StatusOK, res)
	}))
	mux.HandleFunc("GET /v1/agents/{id}/context", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		format, err := agent.ParseContextFormat(r.URL.Query().Get("format"))
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("query format: %w", err))
			return
		}
		c, err := a.ContextAnswer(format)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, err)
			return
		}
		writeJSON(w, http.StatusOK, c)
	}))
	mux.HandleFunc("GET /v1/agents/{id}/reminders", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		rs := append(a.Reminders(), d.sharedReminders(a.ID)...)
		writeJSON(w, http.StatusOK, map[string]any{"reminders": rs, "text": reminders.Text(rs)})
	}))
}
