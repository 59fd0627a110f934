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

// memoryRoutes serves the agent's surface: the memory tool, reminders, and
// the operator's block changes.
func (d *Daemon) memoryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/agents/{id}/memory", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
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
		tool, err := a.MemoryTool()
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, memtool.Result{Content: err.Error(), IsError: true})
			return
		}
		res := tool.Run(in)
		if !res.IsError && in.Command != "view" {
			d.metrics.commits.Inc()
		}
		writeJSON(w, http.StatusOK, res)
	}))
	mux.HandleFunc("GET /v1/agents/{id}/reminders", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		rs := a.Reminders()
		writeJSON(w, http.StatusOK, map[string]any{"reminders": rs, "text": reminders.Text(rs)})
	}))
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
		writeJSON(w, http.StatusOK, map[string]any{"path": rel, "turn": tr})
	}))
}
