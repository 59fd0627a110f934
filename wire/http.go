// Package wire is the client side of git's smart protocol as memfsd speaks
// it: sessions with a remote (http, https, and any scheme installed in
// go-git's client, the embedded remote's memfsd:// among them), HTTP
// deadlines on every exchange, the pack of the commits a remote lacks,
// one ref update sent with report-status, and what a refusal looks like.
// It holds no lock and knows no repository: the repository (package
// gitmem) decides what to send and moves its refs after.
package wire

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Defaults of HTTPTimeouts.
const (
	DefaultDialTimeout           = 10 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout           = 60 * time.Second
)

// HTTPTimeouts bound every HTTP exchange with a remote, so a server that
// accepts a connection and then says nothing costs a sync attempt, never a
// hang. Zero fields take the defaults.
type HTTPTimeouts struct {
	Dial           time.Duration // TCP connect
	TLSHandshake   time.Duration
	ResponseHeader time.Duration // request sent → response headers
	// Idle is how long an established connection may make no progress on
	// a read or a write (a body that stalls midway), and how long a pooled
	// connection is kept unused.
	Idle time.Duration
}

// DefaultHTTPTimeouts are the Default* values.
func DefaultHTTPTimeouts() HTTPTimeouts {
	return HTTPTimeouts{Dial: DefaultDialTimeout, TLSHandshake: DefaultTLSHandshakeTimeout,
		ResponseHeader: DefaultResponseHeaderTimeout, Idle: DefaultIdleTimeout}
}

func (t HTTPTimeouts) withDefaults() HTTPTimeouts {
	d := DefaultHTTPTimeouts()
	if t.Dial <= 0 {
		t.Dial = d.Dial
	}
	if t.TLSHandshake <= 0 {
		t.TLSHandshake = d.TLSHandshake
	}
	if t.ResponseHeader <= 0 {
		t.ResponseHeader = d.ResponseHeader
	}
	if t.Idle <= 0 {
		t.Idle = d.Idle
	}
	return t
}

// NewHTTPClient is an http.Client with these deadlines. Its transport is an
// *http.Transport (go-git clones it for endpoints with TLS options) whose
// connections set a fresh deadline before every read and write. go-git
// passes each call's context into its requests (req.WithContext in
// plumbing/transport/http), so a cancelled context ends a request too.
func NewHTTPClient(t HTTPTimeouts) *http.Client {
	t = t.withDefaults()
	dialer := &net.Dialer{Timeout: t.Dial, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, idle: t.Idle}, nil
		},
		TLSHandshakeTimeout:   t.TLSHandshake,
		ResponseHeaderTimeout: t.ResponseHeader,
		IdleConnTimeout:       t.Idle,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   16,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: tr}
}

// InstallHTTPClient installs, process-wide, a client with these deadlines
// for go-git's http and https transports. The last call wins; a call
// beside syncs in flight is safe (the transports in go-git's map are
// installed once, at init, and only the client behind them is swapped).
func InstallHTTPClient(t HTTPTimeouts) {
	c := githttp.NewClient(NewHTTPClient(t))
	httpTransport.inner.Store(&c)
}

// httpTransport serves go-git's http and https schemes with whichever
// client InstallHTTPClient put there last (go-git's own until then).
var httpTransport = func() *swappedTransport {
	s := &swappedTransport{}
	c := githttp.DefaultClient
	s.inner.Store(&c)
	return s
}()

func init() {
	client.InstallProtocol("http", httpTransport)
	client.InstallProtocol("https", httpTransport)
}

// swappedTransport hands each session to the transport stored last.
type swappedTransport struct {
	inner atomic.Pointer[transport.Transport]
}

func (s *swappedTransport) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	return (*s.inner.Load()).NewUploadPackSession(ep, auth)
}

func (s *swappedTransport) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	return (*s.inner.Load()).NewReceivePackSession(ep, auth)
}

// idleConn fails a connection that makes no progress for idle. Progress
// either way counts for both directions: Go's HTTP client keeps a read
// pending while it writes a request, so a long upload that is moving must
// not trip the read deadline; writes go out in chunks, each one progress.
type idleConn struct {
	net.Conn
	idle time.Duration
}

// idleChunk is how much a write sends per deadline.
const idleChunk = 64 << 10

func (c *idleConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if err := c.Conn.SetDeadline(time.Now().Add(c.idle)); err != nil {
			return n, err
		}
		end := min(n+idleChunk, len(p))
		m, err := c.Conn.Write(p[n:end])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
