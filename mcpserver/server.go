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
	// of changes), each with how many holds it has: its session's (a
	// stdio session, an initialised HTTP session) and each listen stream
	// of a 2026-07-28 client. The streamable HTTP handler makes a server
	// for every request it looks at; one nobody holds is not kept.
	servers map[*mcp.Server]int
	shared  map[memtool.Dialect]*mcp.Server // sharedServer's, by dialect
	// sessions are the HTTP sessions open: Close ends them (their SSE
	// streams would otherwise hold the socket's shutdown).
	sessions map[*mcp.ServerSession]bool
	files    map[string]string // path → blob at the last check
	head     string
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
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	h := &Host{
		a:        a,
		opts:     opts,
		log:      opts.Logger.With("agent", a.ID, "unit", "mcp"),
		calls:    make(chan struct{}, 1),
		pushNow:  make(chan struct{}, 1),
		changed:  make(chan struct{}, 1),
		servers:  map[*mcp.Server]int{},
		shared:   map[memtool.Dialect]*mcp.Server{},
		sessions: map[*mcp.ServerSession]bool{},
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.wg.Add(2)
	go h.pushLoop()
	go h.watchLoop()
	return h
}

// Close ends the host's HTTP sessions, stops its loops and waits for them.
// What is not pushed yet is the agent's to push (its Close pushes once).
func (h *Host) Close() {
	h.cancel()
	h.mu.Lock()
	sessions := make([]*mcp.ServerSession, 0, len(h.sessions))
	for ss := range h.sessions {
		sessions = append(sessions, ss)
	}
	h.mu.Unlock()
	for _, ss := range sessions {
		ss.Close()
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
func (h *Host) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		// ?dialect=letta-code picks the session's memory tool dialect.
		d, err := memtool.ParseDialect(r.URL.Query().Get("dialect"))
		if err != nil || d == "" {
			d = h.opts.Dialect
		}
		if r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("Mcp-Protocol-Version") >= statelessVersion {
			return h.sharedServer(d)
		}
		srv, _ := h.newServer(d)
		return srv
	}, &mcp.StreamableHTTPOptions{
		Logger: h.sdkLog(),
		// A session nobody ends (a client gone without DELETE) is dropped
		// after this, and what it wrote pushed.
		SessionTimeout: 30 * time.Minute,
	})
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
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if req.Session.InitializeParams() == nil {
				h.hold(srv, files)
			}
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			if req.Session.InitializeParams() == nil {
				h.release(srv)
			}
			return nil
		},
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			// A streamable HTTP session ends when its client deletes it or
			// it times out: then push what it wrote.
			ss := req.Session
			h.mu.Lock()
			if h.ctx.Err() != nil {
				h.mu.Unlock()
				return
			}
			h.sessions[ss] = true
			h.wg.Add(1)
			h.mu.Unlock()
			h.hold(srv, files)
			go func() {
				defer h.wg.Done()
				defer func() {
					h.mu.Lock()
					delete(h.sessions, ss)
					h.mu.Unlock()
				}()
				done := make(chan struct{})
				go func() { ss.Wait(); close(done) }()
				select {
				case <-done:
					h.release(srv)
					h.sessionEnded()
				case <-h.ctx.Done():
					h.release(srv)
				}
			}()
		},
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
// as many releases. The first hold brings its resources from files (the
// ones it was made with) to the files now.
func (h *Host) hold(srv *mcp.Server, files map[string]string) {
	h.mu.Lock()
	h.servers[srv]++
	first := h.servers[srv] == 1
	now := h.files
	h.mu.Unlock()
	if !first || now == nil {
		return
	}
	var gone []string
	for p := range files {
		if _, ok := now[p]; !ok {
			gone = append(gone, FileURI(p))
		}
	}
	if len(gone) > 0 {
		srv.RemoveResources(gone...)
	}
	for p := range now {
		if _, ok := files[p]; !ok {
			srv.AddResource(h.fileResource(p), h.readFile)
		}
	}
}

// release undoes one hold: a server nobody holds gets no more updates.
func (h *Host) release(srv *mcp.Server) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.servers[srv]--; h.servers[srv] <= 0 {
		delete(h.servers, srv)
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
	for {
		select {
		case <-h.ctx.Done():
			return
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
