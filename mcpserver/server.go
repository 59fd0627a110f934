// Package mcpserver serves one agent's memory over the Model Context
// Protocol (SPEC §10), on the official Go SDK: the memory tool and its
// read-only companions through the agent's one pipeline (the API's
// strings, trust rules and reminders), the memory files as resources with
// subscriptions, and the context as a resource and a prompt.
//
// A Host is the MCP side of one agent unit: it makes one mcp.Server per
// session (stdio, or each streamable HTTP session on the agent's own
// socket), pushes after PushIdle without a tool call, at a session's end
// and on memory_sync, and tells subscribed sessions when a file changes.
package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
)

// Defaults of a Host's settings.
const (
	// DefaultPushIdle is how long without a tool call before writes are
	// pushed (MCP has no turn end).
	DefaultPushIdle = 2 * time.Second
	// DefaultSyncWait bounds how long memory_sync (and an idle push) waits
	// for the push; past it the answer is "delayed" and the push goes on.
	DefaultSyncWait = 8 * time.Second
	// DefaultPollInterval is how often HEAD is checked for changed files
	// (a pull, a direct write committed) when nothing else woke the check.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultPageSize is how many resources one resources/list page holds.
	DefaultPageSize = 100
)

// Options are a Host's settings; zero fields take the defaults.
type Options struct {
	// Dialect is the memory tool's: memtool.Anthropic (memory_20250818,
	// the default) or memtool.LettaCode (memory and memory_apply_patch).
	Dialect      memtool.Dialect
	PushIdle     time.Duration
	SyncWait     time.Duration
	PollInterval time.Duration
	PageSize     int
	// MaxSessions, SessionIdle, MaxSubscriptions and WriteTimeout bound
	// what the agent's MCP clients make the host hold (bounds.go).
	MaxSessions      int
	SessionIdle      time.Duration
	MaxSubscriptions int
	WriteTimeout     time.Duration
	// ExtraReminders, when set, adds reminders to the agent's own (the
	// daemon's shared repositories).
	ExtraReminders func() []reminders.Reminder
	Logger         *slog.Logger
	// Version is what the server reports as its version.
	Version string
}

// Host serves agent a over MCP. NewHost starts its two goroutines (the push
// loop and the change watcher); Close stops them.
type Host struct {
	a    *agent.Agent
	opts Options
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	calls   chan struct{} // a tool call came: re-arm the idle push
	pushNow chan struct{} // a session ended: push what is pending
	changed chan struct{} // a write was made: check HEAD now

	mu    sync.Mutex
	dirty bool // writes made through MCP and not pushed yet
	// servers are the session servers kept in step with the files (told
	// of changes), each with how many holds it has (its session's: a
	// stdio session, an HTTP session; and each subscription of a
	// 2026-07-28 client's listen stream) and its notifier. The streamable
	// HTTP handler makes a server for every session; one nobody holds is
	// not kept.
	servers map[*mcp.Server]*held
	shared  map[memtool.Dialect]*mcp.Server // sharedServer's, by dialect
	// httpSessions are the HTTP sessions open, by id: at most
	// MaxSessions with starting (initialize requests being served);
	// Close ends them (their streams would otherwise hold the socket's
	// shutdown).
	httpSessions map[string]*httpSession
	starting     int
	stateless    int                                    // session-less requests in flight
	inflight     map[string]int                         // requests in flight, by session id
	subs         map[*mcp.ServerSession]map[string]bool // subscriptions, by session
	files        map[string]string                      // path → blob at the last check
	head         string
	noDeadlines  atomic.Bool // said once: the response writer has no deadlines
}

// NewHost makes the MCP host of a and starts its loops.
func NewHost(a *agent.Agent, opts Options) *Host {
	if opts.Dialect == "" {
		opts.Dialect = memtool.Anthropic
	}
	if opts.PushIdle <= 0 {
		opts.PushIdle = DefaultPushIdle
	}
	if opts.SyncWait <= 0 {
		opts.SyncWait = DefaultSyncWait
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.MaxSubscriptions <= 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	h := &Host{
		a:            a,
		opts:         opts,
		log:          opts.Logger.With("agent", a.ID, "unit", "mcp"),
		calls:        make(chan struct{}, 1),
		pushNow:      make(chan struct{}, 1),
		changed:      make(chan struct{}, 1),
		servers:      map[*mcp.Server]*held{},
		shared:       map[memtool.Dialect]*mcp.Server{},
		httpSessions: map[string]*httpSession{},
		inflight:     map[string]int{},
		subs:         map[*mcp.ServerSession]map[string]bool{},
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.wg.Add(2)
	go h.pushLoop()
	go h.watchLoop()
	return h
}

// Close ends the host's HTTP requests in flight and its sessions, stops
// its loops and waits for them. What is not pushed yet is the agent's to
// push (its Close pushes once). A session's end waits for its tool calls
// in flight: that is not waited for here.
func (h *Host) Close() {
	h.cancel()
	h.mu.Lock()
	sessions := make([]*mcp.ServerSession, 0, len(h.httpSessions))
	for _, s := range h.httpSessions {
		sessions = append(sessions, s.ss)
	}
	h.mu.Unlock()
	for _, ss := range sessions {
		go ss.Close()
	}
	h.wg.Wait()
}

// Run serves one session over t (stdio: &mcp.StdioTransport{}) until the
// client disconnects or ctx ends; then what the session wrote is pushed
// (within SyncWait).
func (h *Host) Run(ctx context.Context, t mcp.Transport) error {
	srv, files := h.newServer(h.opts.Dialect)
	h.hold(srv, files)
	err := srv.Run(ctx, t)
	h.release(srv)
	h.pushPending()
	return err
}

// Handler serves streamable HTTP, reaching this agent only: a session
// (an initialize request) gets its own server; a 2026-07-28 client's
// requests, which have no session, share one server per dialect, as does
// the SDK's look at a request of an open session (whose own server
// answers it). Making a server (tools, schemas, a resource per file) for
// each of those requests was most of a forwarded call's cost.
//
// The host bounds what the requests make (bounds.go): sessions, requests
// without one, subscriptions, and each write to the client.
func (h *Host) Handler() http.Handler {
	sdk := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		// ?dialect=letta-code picks the session's memory tool dialect.
		d, err := memtool.ParseDialect(r.URL.Query().Get("dialect"))
		if err != nil || d == "" {
			d = h.opts.Dialect
		}
		if r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("Mcp-Protocol-Version") >= statelessVersion {
			return h.sharedServer(d)
		}
		// A request that starts a session: the SDK asks twice, one server.
		if rs, ok := r.Context().Value(reqServerKey{}).(*reqServer); ok {
			if rs.srv == nil {
				rs.srv, rs.files = h.newServer(d)
			}
			return rs.srv
		}
		srv, _ := h.newServer(d)
		return srv
	}, &mcp.StreamableHTTPOptions{
		Logger: h.sdkLog(),
		// No SessionTimeout: the SDK's counts only POSTs, and would end a
		// session whose stream is open; the host ends a session after
		// SessionIdle with no request in flight (reapIdle).
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serveHTTP(sdk, w, r) })
}

// statelessVersion is the first MCP version without sessions (SEP-2575):
// each request stands alone.
const statelessVersion = "2026-07-28"

// sharedServer is dialect's server for requests without a session of
// their own, made once and kept in step until the host closes.
func (h *Host) sharedServer(d memtool.Dialect) *mcp.Server {
	h.mu.Lock()
	srv := h.shared[d]
	h.mu.Unlock()
	if srv != nil {
		return srv
	}
	srv, files := h.newServer(d)
	h.mu.Lock()
	if cur := h.shared[d]; cur != nil {
		h.mu.Unlock()
		return cur // made meanwhile by another request
	}
	h.shared[d] = srv
	h.mu.Unlock()
	h.hold(srv, files)
	return srv
}

// NewServer makes the server of one session: the tools, the resources as
// they are now (kept in step by the watcher) and the context prompt.
// It is kept in step with the files while its session holds it: Run
// does that for the sessions it serves.
func (h *Host) NewServer() *mcp.Server {
	srv, _ := h.newServer(h.opts.Dialect)
	return srv
}

// newServer makes a session's server with the files as they are now
// (path → blob, returned) as its resources.
func (h *Host) newServer(dialect memtool.Dialect) (*mcp.Server, map[string]string) {
	var srv *mcp.Server
	var files map[string]string
	srv = mcp.NewServer(&mcp.Implementation{Name: "memfsd", Title: "memfsd: git-backed agent memory", Version: h.opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       h.sdkLog(),
		PageSize:     h.opts.PageSize,
		HasResources: true,
		HasPrompts:   true,
		HasTools:     true,
		// Subscriptions are kept by the SDK; every memory URI may be
		// subscribed, also one not created yet. A 2026-07-28 client's
		// subscription (a subscriptions/listen stream, no initialised
		// session) holds the server while the stream is open; a session's
		// subscriptions end with the session, which holds it already.
		// A session's subscriptions are bounded (MaxSubscriptions).
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if err := h.subscribe(req.Session, req.Params.URI); err != nil {
				return err
			}
			if req.Session.InitializeParams() == nil {
				h.hold(srv, files)
			}
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			h.unsubscribe(req.Session, req.Params.URI)
			if req.Session.InitializeParams() == nil {
				h.release(srv)
			}
			return nil
		},
		// An HTTP session is held from its initialize on (sessionStarted);
		// a stdio one by Run.
	})
	s := &session{h: h, dialect: dialect}
	s.addTools(srv)
	h.addPrompt(srv)
	h.mu.Lock()
	files = h.files
	h.mu.Unlock()
	if files == nil {
		h.checkChanges() // the first session: list the files now
		h.mu.Lock()
		files = h.files
		h.mu.Unlock()
	}
	h.addResources(srv, files)
	return srv, files
}

// hold keeps srv in step with the files (and tells it of changes) until
// as many releases. The first hold starts its notifier, which brings its
// resources from files (the ones it was made with) to the files now.
func (h *Host) hold(srv *mcp.Server, files map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hd := h.servers[srv]; hd != nil {
		hd.n++
		return
	}
	if h.ctx.Err() != nil {
		return
	}
	hd := &held{n: 1, srv: srv, known: files, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	h.servers[srv] = hd
	hd.wake <- struct{}{}
	h.wg.Add(1)
	go h.notify(hd)
}

// release undoes one hold: a server nobody holds gets no more updates.
func (h *Host) release(srv *mcp.Server) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd := h.servers[srv]
	if hd == nil {
		return
	}
	if hd.n--; hd.n <= 0 {
		delete(h.servers, srv)
		close(hd.stop)
	}
}

// sessionEnded asks the push loop to push what is pending.
func (h *Host) sessionEnded() {
	select {
	case h.pushNow <- struct{}{}:
	default:
	}
}

// touched notes a tool call (wrote: it changed memory): the idle push is
// re-armed and the watcher checks HEAD.
func (h *Host) touched(wrote bool) {
	if wrote {
		h.mu.Lock()
		h.dirty = true
		h.mu.Unlock()
		select {
		case h.changed <- struct{}{}:
		default:
		}
	}
	select {
	case h.calls <- struct{}{}:
	default:
	}
}

// pushLoop pushes PushIdle after the last tool call, and when a session
// ends, if anything was written through MCP since the last push.
func (h *Host) pushLoop() {
	defer h.wg.Done()
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	reap := time.NewTicker(max(h.opts.SessionIdle/4, 10*time.Millisecond))
	defer reap.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-reap.C:
			h.reapIdle()
		case <-h.calls:
			idle.Reset(h.opts.PushIdle)
		case <-idle.C:
			h.pushPending()
		case <-h.pushNow:
			h.pushPending()
		}
	}
}

// pushPending pushes when writes are pending (a turn of the agent: commit
// what is pending, push). A push that did not get through stays pending
// for the next idle period.
func (h *Host) pushPending() {
	h.mu.Lock()
	dirty := h.dirty
	h.dirty = false
	h.mu.Unlock()
	if !dirty {
		return
	}
	res := h.a.Turn(h.ctx.Done(), h.opts.SyncWait)
	h.log.Debug("pushed after MCP writes", "outcome", res.Outcome, "pushed", res.Pushed)
	if res.Outcome == agent.OutcomeFailed || res.Outcome == agent.OutcomeDelayed {
		h.mu.Lock()
		h.dirty = true
		h.mu.Unlock()
	}
}

// sync pushes now (memory_sync): the turn's answer.
func (h *Host) sync(ctx context.Context) agent.TurnResult {
	h.mu.Lock()
	h.dirty = false
	h.mu.Unlock()
	res := h.a.Turn(ctx.Done(), h.opts.SyncWait)
	if res.Outcome == agent.OutcomeFailed || res.Outcome == agent.OutcomeDelayed {
		h.mu.Lock()
		h.dirty = true
		h.mu.Unlock()
	}
	return res
}

const instructions = "memfsd keeps this agent's memory in git. Use the memory tool to view and change files under /memories " +
	"(every write is a commit, pushed when you go idle); memory_history and memory_show read the history; memory_sync pushes now. " +
	"system/persona.md and system/human.md are read-only. The memory_context prompt (and resource) is the memory as the agent's prompt shows it."

// sdkLog is the SDK's logger: h.log at debug level (the SDK logs every
// session at info), else nothing.
func (h *Host) sdkLog() *slog.Logger {
	if h.log.Enabled(context.Background(), slog.LevelDebug) {
		return h.log
	}
	return slog.New(slog.DiscardHandler)
}
