package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of what one agent's MCP clients can make the host hold (SPEC §13):
// the agent is untrusted and drives its own socket.
const (
	// DefaultMaxSessions is how many streamable HTTP sessions one agent may
	// have open at once; it also bounds its session-less (2026-07-28)
	// requests in flight, subscriptions/listen streams included.
	DefaultMaxSessions = 32
	// DefaultSessionIdle is how long a session with no request in flight
	// (an open GET stream is one) is kept; then it is ended and what it
	// wrote pushed.
	DefaultSessionIdle = 5 * time.Minute
	// DefaultMaxSubscriptions is how many resources one session may be
	// subscribed to.
	DefaultMaxSubscriptions = 256
	// DefaultWriteTimeout bounds each write to a client (an event of its
	// stream, an answer): a client that does not read within it is dropped.
	DefaultWriteTimeout = 10 * time.Second
	// maxSessionRequests is how many requests one session may have in
	// flight (its GET stream is one); past it a request is answered 429.
	maxSessionRequests = 16
	// maxSubscribeURI is the longest URI a subscription may name.
	maxSubscribeURI = 4096
)

// httpSession is a streamable HTTP session the host tracks: for the cap,
// the idle expiry and Close.
type httpSession struct {
	ss   *mcp.ServerSession
	srv  *mcp.Server
	last time.Time // when its last request ended (or the session began)
}

// reqServer carries the server made for a request that starts a session:
// the SDK asks for a server twice for such a request, and the host must
// find the session it made.
type reqServer struct {
	srv   *mcp.Server
	files map[string]string
}

type reqServerKey struct{}

// serveHTTP is the host's streamable HTTP: the SDK's handler inside the
// bounds. A request that would start a session past MaxSessions, or a
// session-less one past as many in flight, is answered 429 with a JSON-RPC
// error; every write to the client has WriteTimeout, and a client that
// does not read within it is dropped (its request ended, its session
// closed), never waited on.
func (h *Host) serveHTTP(sdk http.Handler, w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	id := r.Header.Get("Mcp-Session-Id")
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: h.opts.WriteTimeout}
	// A stream lives as long as its session: not the server's write
	// timeout, but WriteTimeout per write.
	if err := dw.rc.SetWriteDeadline(time.Time{}); err != nil && h.noDeadlines.CompareAndSwap(false, true) {
		h.log.Error("MCP writes to clients have no deadline here (the response writer does not support them): a client that does not read is not dropped; serve Handler unwrapped or with a writer that has Unwrap", "err", err)
	}
	dw.onFail = func(err error) {
		cancel()
		if id != "" {
			h.dropSession(id, err)
		}
	}
	// Close ends every request in flight (streams would hold the socket's
	// shutdown otherwise), a write blocked on a client that does not read
	// included: its deadline becomes now.
	defer context.AfterFunc(h.ctx, func() {
		cancel()
		_ = dw.rc.SetWriteDeadline(time.Now())
	})()
	switch {
	case id != "":
		if n, ok := h.enterSession(id); !ok {
			h.refuse(w, r, fmt.Sprintf("mcp request: this session of agent %s has %d requests in flight (its GET stream included), the most one session may; wait for an answer before sending more", h.a.ID, n))
			return
		}
		defer h.leaveSession(id)
	case r.Header.Get("Mcp-Protocol-Version") >= statelessVersion:
		if n, ok := h.reserve(&h.stateless); !ok {
			h.refuse(w, r, fmt.Sprintf("mcp request: agent %s has %d MCP requests without a session in flight (subscriptions/listen streams included), the most one agent may (--mcp-max-sessions); end a stream first, then send it again", h.a.ID, n))
			return
		}
		defer h.unreserve(&h.stateless)
	case r.Method == http.MethodPost:
		// No session yet: this request starts one (an initialize).
		if n, ok := h.reserve(&h.starting); !ok {
			h.refuse(w, r, fmt.Sprintf("mcp initialize: agent %s has %d MCP sessions open, the most one agent may (--mcp-max-sessions); end one (DELETE /mcp with its Mcp-Session-Id) or wait for an idle one to end (after %s without a request), then start again", h.a.ID, n, h.opts.SessionIdle))
			return
		}
		rs := &reqServer{}
		ctx = context.WithValue(ctx, reqServerKey{}, rs)
		defer h.sessionStarted(rs)
	}
	sdk.ServeHTTP(dw, r.WithContext(ctx))
}

// reserve takes one of MaxSessions for *n (h.starting: a session being
// started; h.stateless: a session-less request); false past the cap, with
// how many are held.
func (h *Host) reserve(n *int) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := *n
	if n == &h.starting {
		held += len(h.httpSessions)
	}
	if held >= h.opts.MaxSessions {
		return held, false
	}
	*n++
	return held, true
}

func (h *Host) unreserve(n *int) {
	h.mu.Lock()
	*n--
	h.mu.Unlock()
}

// sessionStarted ends a request that could start a session: the session
// the SDK made for it (initialized) is tracked until it ends, else the
// reservation is given back.
func (h *Host) sessionStarted(rs *reqServer) {
	var ss *mcp.ServerSession
	if rs.srv != nil {
		for s := range rs.srv.Sessions() {
			if s.ID() != "" && s.InitializeParams() != nil {
				ss = s
			}
		}
	}
	h.mu.Lock()
	h.starting--
	if ss == nil || h.ctx.Err() != nil {
		h.mu.Unlock()
		if ss != nil {
			go ss.Close()
		}
		return
	}
	s := &httpSession{ss: ss, srv: rs.srv, last: time.Now()}
	h.httpSessions[ss.ID()] = s
	h.wg.Add(1)
	h.mu.Unlock()
	h.hold(rs.srv, rs.files)
	// The session ends when its client deletes it, it idles out, it does
	// not read, or the host closes: then what it wrote is pushed.
	go func() {
		defer h.wg.Done()
		done := make(chan struct{})
		go func() { ss.Wait(); close(done) }()
		select {
		case <-done:
		case <-h.ctx.Done():
		}
		h.mu.Lock()
		delete(h.httpSessions, ss.ID())
		delete(h.subs, ss)
		h.mu.Unlock()
		h.release(rs.srv)
		if h.ctx.Err() == nil {
			h.sessionEnded()
		}
	}()
}

// enterSession notes a request of session id; false past
// maxSessionRequests in flight, with how many are. Counted by id, not by
// tracked session: a client may send its next requests (its GET stream)
// before the request that started the session has ended.
func (h *Host) enterSession(id string) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.inflight[id]
	if n >= maxSessionRequests {
		return n, false
	}
	h.inflight[id] = n + 1
	return n, true
}

func (h *Host) leaveSession(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inflight[id]--; h.inflight[id] <= 0 {
		delete(h.inflight, id)
	}
	if s := h.httpSessions[id]; s != nil {
		s.last = time.Now()
	}
}

// dropSession ends session id: its client did not take a write within
// WriteTimeout.
func (h *Host) dropSession(id string, err error) {
	if h.ctx.Err() != nil {
		return // Close ends the sessions
	}
	h.mu.Lock()
	s := h.httpSessions[id]
	h.mu.Unlock()
	if s == nil {
		return
	}
	h.log.Warn("MCP client not reading: its session is dropped", "session", id, "write_timeout", h.opts.WriteTimeout, "err", err)
	go s.ss.Close() // waits for the session's requests in flight
}

// reapIdle ends the sessions with no request for SessionIdle.
func (h *Host) reapIdle() {
	now := time.Now()
	var idle []*httpSession
	h.mu.Lock()
	for _, s := range h.httpSessions {
		if h.inflight[s.ss.ID()] == 0 && now.Sub(s.last) >= h.opts.SessionIdle {
			idle = append(idle, s)
		}
	}
	h.mu.Unlock()
	for _, s := range idle {
		h.log.Debug("MCP session idle: ended", "session", s.ss.ID(), "idle", h.opts.SessionIdle)
		go s.ss.Close()
	}
}

// subscribe notes a subscription of ss to uri: refused past
// MaxSubscriptions for the session, or for a URI that is not a memory
// file's or the context's.
func (h *Host) subscribe(ss *mcp.ServerSession, uri string) error {
	if len(uri) > maxSubscribeURI || !(strings.HasPrefix(uri, URIPrefix) || strings.HasPrefix(uri, ContextURI)) {
		return fmt.Errorf("resources/subscribe %.80q: not a memory resource; subscribe to %s<path> (a memory file) or %s (the context)", uri, URIPrefix, ContextURI)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.subs[ss]
	if set[uri] {
		return nil
	}
	if len(set) >= h.opts.MaxSubscriptions {
		return fmt.Errorf("resources/subscribe %s: this session has %d subscriptions, the most one session may (--mcp-max-subscriptions); unsubscribe from one first, or subscribe to %s, which changes with every file", uri, len(set), ContextURI)
	}
	if set == nil {
		set = map[string]bool{}
		h.subs[ss] = set
	}
	set[uri] = true
	return nil
}

func (h *Host) unsubscribe(ss *mcp.ServerSession, uri string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if set := h.subs[ss]; set != nil {
		delete(set, uri)
		if len(set) == 0 {
			delete(h.subs, ss)
		}
	}
}

// refuse answers 429 with a JSON-RPC error (the request's id when it has
// one) saying which bound and what to do.
func (h *Host) refuse(w http.ResponseWriter, r *http.Request, msg string) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if r.Body != nil {
		_ = json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req)
	}
	if len(req.ID) == 0 {
		req.ID = json.RawMessage("null")
	}
	h.log.Warn("MCP bound reached: request refused", "err", msg)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": codeBound, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}

// codeBound is the JSON-RPC error code of a request refused by a bound
// (a server error, in -32000..-32099).
const codeBound = -32029

// errNotReading is a write to a client already found not reading.
var errNotReading = errors.New("mcp client not reading: dropped")

// deadlineWriter gives every write (and flush) to the client WriteTimeout:
// a client that does not read makes the write fail, not wait. The first
// failure calls onFail once, and every later write fails at once.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	onFail  func(error)
	failed  atomic.Bool
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if w.failed.Load() {
		return 0, errNotReading
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	n, err := w.ResponseWriter.Write(p)
	if err != nil {
		w.fail(err)
	}
	return n, err
}

// FlushError is what http.ResponseController.Flush calls (the SDK flushes
// each event).
func (w *deadlineWriter) FlushError() error {
	if w.failed.Load() {
		return errNotReading
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	err := w.rc.Flush()
	if err != nil {
		w.fail(err)
	}
	return err
}

func (w *deadlineWriter) Flush() { _ = w.FlushError() }

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *deadlineWriter) fail(err error) {
	if w.failed.CompareAndSwap(false, true) && w.onFail != nil {
		w.onFail(err)
	}
}
