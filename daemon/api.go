package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/internal/unixsock"

	"github.com/memfsd/memfsd/internal/fsperm"
)

// AgentHandler is the API on the agent's socket (SPEC §6): the agent's
// routes; the operator's are answered 403 with the admin socket's address.
func (d *Daemon) AgentHandler(adminAddr string) http.Handler {
	mux := http.NewServeMux()
	d.agentRoutes(mux)
	for _, pattern := range operatorPatterns {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusForbidden, fmt.Errorf("%s %s is an operator route: it is served only on the admin socket (%s), not on the agent's", r.Method, r.URL.Path, adminAddr))
		})
	}
	return mux
}

// AdminHandler is the API on the operator's socket: every route.
func (d *Daemon) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	d.agentRoutes(mux)
	d.operatorRoutes(mux)
	return mux
}

// agentRoutes are what the agent (and anyone on its socket) may call. On
// an agent's own socket (scoped) they reach that agent only: the list and
// /healthz are about it alone, /metrics (every agent's totals) is not served.
func (d *Daemon) agentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ready, n := d.Ready(), len(d.IDs())
		if only, ok := scopeOf(r); ok {
			a := d.get(only)
			ready, n = a != nil && a.Ready(), 1
		}
		if !ready {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ready": true, "agents": n})
	})
	metrics := promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if only, ok := scopeOf(r); ok {
			writeError(w, http.StatusForbidden, fmt.Errorf("GET /metrics counts every agent's activity: it is not served on agent %s's own socket; scrape the shared --listen socket or the admin socket", only))
			return
		}
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /v1/agents", func(w http.ResponseWriter, r *http.Request) {
		// The list reads each branch's position but does not walk every
		// work tree (a daemon may hold a thousand); dirty is the watcher's
		// view. GET .../status scans.
		// Each agent answers on its own (Status is bounded by
		// agent.AnswerDeadline), so one stuck agent costs the list that
		// deadline once, not once per agent behind it.
		var as []*agent.Agent
		only, scoped := scopeOf(r)
		for _, a := range d.all() {
			if !scoped || a.ID == only {
				as = append(as, a)
			}
		}
		out := make([]agent.Status, len(as))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		for i, a := range as {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				out[i] = a.Status(false)
			}()
		}
		wg.Wait()
		answer := map[string]any{"agents": out}
		if !scoped {
			// The shared repositories too (one unit each): `memfsd
			// status` shows their state and what waits on the operator.
			units := d.shared.all()
			shared := make([]agent.Status, len(units))
			for i, u := range units {
				wg.Add(1)
				go func() {
					defer wg.Done()
					shared[i] = u.Status(false)
				}()
			}
			wg.Wait()
			answer["shared"] = shared
		}
		writeJSON(w, http.StatusOK, answer)
	})
	mux.HandleFunc("GET /v1/agents/{id}/status", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		writeJSON(w, http.StatusOK, a.Status(true))
	}))
	mux.HandleFunc("POST /v1/agents/{id}/turn", d.withAgent(func(w http.ResponseWriter, r *http.Request, a *agent.Agent) {
		wait, err := waitParam(r, DefaultTurnWait)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		extendWrite(w, wait)
		writeJSON(w, http.StatusOK, d.turn(r.Context().Done(), a, wait))
	}))
	d.memoryRoutes(mux)
	d.historyRoutes(mux)
	d.searchRoutes(mux)
	d.budgetRoutes(mux)
	d.sharedRoutes(mux)
	d.mirrorRoutes(mux)
}

// withAgent resolves {id}: 403 for another agent's id on an agent's own
// socket, 400 for a bad id, 404 for one not managed.
func (d *Daemon) withAgent(h func(http.ResponseWriter, *http.Request, *agent.Agent)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if only, ok := scopeOf(r); ok && id != only {
			writeError(w, http.StatusForbidden, errOtherAgent(only, id))
			return
		}
		if err := agent.ValidateID(id); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		a := d.get(id)
		if a == nil {
			writeError(w, http.StatusNotFound, fmt.Errorf("agent %q is not managed: PUT /v1/agents/%s first", id, id))
			return
		}
		defer func() { // a panic about one agent ends at that agent
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.Panicked(r.Method+" "+r.URL.Path, v)
				writeError(w, http.StatusInternalServerError, fmt.Errorf("%s %s: internal error; agent %s's status says what to do", r.Method, r.URL.Path, id))
			}
		}()
		h(w, r, a)
	}
}

func waitParam(r *http.Request, def time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > 10*time.Minute {
		return 0, fmt.Errorf("query wait=%q: want a duration like 8s (at most 10m)", v)
	}
	return d, nil
}

// waitReady waits up to wait (or until the request ends) for the agent's
// work tree to be usable.
func waitReady(ctx context.Context, a *agent.Agent, wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !a.Ready() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-tick.C:
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

// Listen opens the API address: "unix://<path>" (socket mode 0600; a stale
// socket file left by a crash is replaced; a path of any length) or
// "host:port".
func Listen(addr string) (net.Listener, error) { return listen(addr, 0o600) }

// ListenAgent is Listen for an address given to the agent (--listen): its
// socket's mode is fsperm.Socket (0600; 0660 with --share-group). The
// operator's address keeps Listen's 0600.
func ListenAgent(addr string) (net.Listener, error) { return listen(addr, fsperm.Socket()) }

func listen(addr string, mode os.FileMode) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		return unixsock.ListenMode(path, mode)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("listen %q: want unix:///path or host:port", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return l, nil
}

// Server timeouts: a request's headers and body must arrive in time, an
// answer must be written in time (a turn extends its own deadline by its
// wait), and idle keep-alive connections are closed.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = time.Minute
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

// NewServer is the API's http.Server with the Default*Timeout deadlines.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
	}
}

// extendWrite lets a handler that waits (a turn, a first clone) answer
// after its wait: the write deadline becomes wait plus the usual timeout.
func extendWrite(w http.ResponseWriter, wait time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + DefaultWriteTimeout))
}

// decodeBody reads a small JSON request body (4 KiB at most) into v,
// refusing unknown fields; an empty body leaves v as it is.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
