package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/memfsd/memfsd/internal/unixsock"
	"github.com/memfsd/memfsd/mcpserver"
	"github.com/memfsd/memfsd/reminders"

	"github.com/memfsd/memfsd/internal/fsperm"
)

// AgentSocketName is the file name of an agent's own socket, in
// <home>/agents/<id>/ (SPEC §8, one agent per channel).
const AgentSocketName = "memfsd.sock"

// AgentSocketPath is the agent's own socket: <home>/agents/<id>/memfsd.sock.
func AgentSocketPath(home, id string) string {
	return filepath.Join(home, "agents", id, AgentSocketName)
}

// agentSockets are the agents' own sockets: one server per managed agent,
// serving the agent's routes for that agent only.
type agentSockets struct {
	handler http.Handler // the agent socket's routes; nil = no own sockets
	closed  bool
	servers map[string]*http.Server
	// hosts serve MCP at /mcp on each agent's own socket.
	hosts map[string]*mcpserver.Host
	// mcpTokens: each agent gets its --mcp-listen token (mcplisten.go).
	mcpTokens bool
	wg        sync.WaitGroup
}

// MCPPath is where an agent's own socket serves MCP (streamable HTTP).
const MCPPath = "/mcp"

// scopeKey marks a request that came in on an agent's own socket; its
// value is that agent's id.
type scopeKey struct{}

// scopeOf is the agent whose own socket r came in on, if any.
func scopeOf(r *http.Request) (string, bool) {
	id, ok := r.Context().Value(scopeKey{}).(string)
	return id, ok
}

// scoped serves h for agent id alone: every request carries the scope,
// which the routes check (withAgent answers another id 403).
func scoped(id string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, id)))
	})
}

func errOtherAgent(only, id string) error {
	return fmt.Errorf("agent %q: this socket is agent %q's own and serves only its routes (/v1/agents/%s/...); each agent has its own socket, <home>/agents/<id>/%s", id, only, only, AgentSocketName)
}

// ServeAgentSockets gives every agent managed from now on its own socket,
// AgentSocketPath (0600, in its 0700 folder; 0660 in 0710 with --share-group), serving the agent socket's
// routes (adminAddr is named in the operator routes' 403) for that agent
// only. Call it before Manage; Close (or CloseSockets) removes them.
func (d *Daemon) ServeAgentSockets(adminAddr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.socks.handler = d.AgentHandler(adminAddr)
	d.socks.servers = map[string]*http.Server{}
	d.socks.hosts = map[string]*mcpserver.Host{}
}

// agentSocketHandler is what agent id's own socket serves: its routes and,
// at MCPPath, MCP over streamable HTTP reaching that agent only (never on
// the shared or the operator's socket). d.mu is held.
func (d *Daemon) agentSocketHandler(id string) http.Handler {
	routes := scoped(id, d.socks.handler)
	a := d.agents[id]
	if a == nil {
		return routes
	}
	opts := d.MCP
	opts.Logger = d.log
	opts.ExtraReminders = func() []reminders.Reminder { return d.sharedReminders(id) }
	host := mcpserver.NewHost(a, opts)
	d.socks.hosts[id] = host
	mcpHandler := host.Handler()
	mux := http.NewServeMux()
	mux.Handle(MCPPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A session's event stream lives as long as the session: not
		// bounded by the API's write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		mcpHandler.ServeHTTP(w, r)
	}))
	mux.Handle("/", routes)
	return mux
}

// openAgentSocket starts agent id's own socket; d.mu is held. A socket
// that cannot be opened leaves the agent managed, reachable on the shared
// socket only, and says so in the log.
func (d *Daemon) openAgentSocket(id string) {
	s := &d.socks
	if s.handler == nil || s.closed || s.servers[id] != nil {
		return
	}
	path := AgentSocketPath(d.cfg.Home, id)
	l, err := unixsock.ListenMode(path, fsperm.Socket())
	if err != nil {
		d.log.Error("agent socket not opened: the agent is reachable on the shared socket only; fix the cause and restart memfsd", "agent", id, "socket", path, "err", err)
		return
	}
	srv := NewServer(d.agentSocketHandler(id))
	s.servers[id] = srv
	d.ensureMCPToken(id)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("agent socket stopped", "agent", id, "socket", path, "err", err)
		}
	}()
	d.log.Debug("agent socket open", "agent", id, "socket", path)
}

// CloseSockets stops the agents' own sockets: no new connections, requests
// in flight get until ctx ends, then the connections are cut, and the
// socket files are removed. The MCP hosts end their sessions and streams
// at the same time (a stream would hold the socket's shutdown; a client
// that does not read would hold its write until the connection is cut).
// It returns by ctx's end whatever a client does. No socket is opened
// after it.
func (d *Daemon) CloseSockets(ctx context.Context) {
	d.mu.Lock()
	d.socks.closed = true
	servers := d.socks.servers
	d.socks.servers = nil
	hosts := d.socks.hosts
	d.socks.hosts = nil
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() { defer wg.Done(); h.Close() }()
	}
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
			}
		}()
	}
	if !waitOrDone(ctx, wg.Wait) {
		for _, srv := range servers {
			srv.Close()
		}
		d.log.Warn("agent sockets: shutdown bound reached with MCP sessions still ending; going on without them")
	}
	waitOrDone(ctx, d.socks.wg.Wait)
}
