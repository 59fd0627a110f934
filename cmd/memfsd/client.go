package main

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
	"time"

	"github.com/memfsd/memfsd/daemon"
	"github.com/memfsd/memfsd/internal/unixsock"
)

// apiClient talks to a running daemon on its listen address.
type apiClient struct {
	base string
	http *http.Client
	// token, when set, is sent as Authorization: Bearer (a TCP listener
	// with a token file asks it); tokenFlag names the flag of that file.
	token     string
	tokenFlag string
}

// client is newAPIClient with --listen-token-file's token, if any (an
// unreadable file sends none: the daemon's 401 says what is missing).
func (g *globals) client(addr string, timeout time.Duration) *apiClient {
	return g.withToken(newAPIClient(addr, timeout))
}

func (g *globals) withToken(c *apiClient) *apiClient {
	if g.listenTokenFile != "" {
		c.token, _ = daemon.ReadListenToken(g.listenTokenFile)
	}
	return c
}

// adminClient talks to the daemon's --admin-listen with
// --admin-listen-token-file's token, if any (never --listen-token-file's:
// the agents' token does not open the operator's routes).
func (g *globals) adminClient(timeout time.Duration) *apiClient {
	c := newAPIClient(g.adminAddr(g.homeDir()), timeout)
	c.tokenFlag = "--admin-listen-token-file (env MEMFSD_ADMIN_LISTEN_TOKEN_FILE)"
	if g.adminListenTokenFile != "" {
		c.token, _ = daemon.ReadListenToken(g.adminListenTokenFile)
	}
	return c
}

// newAPIClient talks to the daemon at addr: unix:///path (of any length)
// or host:port.
func newAPIClient(addr string, timeout time.Duration) *apiClient {
	return newAPIClientVia(timeout, addr)
}

// agentClient talks to the daemon about agent id: on the agent's own
// socket when it exists (SPEC §8: it serves that agent only), else on
// --listen.
func (g *globals) agentClient(id string, timeout time.Duration) *apiClient {
	home := g.homeDir()
	own := daemon.AgentSocketPath(home, id)
	if fi, err := os.Lstat(own); err == nil && fi.Mode()&os.ModeSocket != 0 {
		return g.withToken(newAPIClientVia(timeout, "unix://"+own, g.listenAddr(home)))
	}
	return g.client(g.listenAddr(home), timeout)
}

// newAPIClientVia dials addrs in order until one connects. Only a failed
// connect moves on to the next: nothing was sent on it, so nothing can
// be applied twice.
func newAPIClientVia(timeout time.Duration, addrs ...string) *apiClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var errs []error
			for _, addr := range addrs {
				var c net.Conn
				var err error
				if path, ok := strings.CutPrefix(addr, "unix://"); ok {
					c, err = unixsock.Dial(ctx, path)
				} else {
					var d net.Dialer
					c, err = d.DialContext(ctx, "tcp", addr)
				}
				if err == nil {
					return c, nil
				}
				errs = append(errs, err)
			}
			return nil, errors.Join(errs...)
		},
	}
	return &apiClient{base: "http://memfsd", http: &http.Client{Transport: tr, Timeout: timeout}, tokenFlag: "--listen-token-file (env MEMFSD_LISTEN_TOKEN_FILE)"}
}

// errUnreachable marks a daemon that could not be connected to: the request
// was never sent, so doing the work directly instead is safe.
type errUnreachable struct{ err error }

func (e errUnreachable) Error() string {
	return fmt.Sprintf("daemon unreachable: %v (is `memfsd run` running with the same --home/--listen?)", e.err)
}

// do sends a request; out receives the JSON answer. It returns the status.
func (c *apiClient) do(method, path string, body io.Reader, out any) (int, error) {
	return c.doWith(method, path, nil, body, out)
}

// doWith is do with extra request headers.
func (c *apiClient) doWith(method, path string, header http.Header, body io.Reader, out any) (int, error) {
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return 0, errUnreachable{err}
		}
		// Sent, maybe applied: never fall back to doing it again.
		return 0, fmt.Errorf("%s %s: the daemon may have applied the request but its answer was lost: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: the daemon answered %d but the answer was lost: %w", method, path, resp.StatusCode, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		// Only a TCP listener with a token file answers this: never
		// mistaken for an answer (nor a reason to do the call directly).
		return resp.StatusCode, fmt.Errorf("%s %s: the daemon answered 401 (%s): give the token's file with %s", method, path, strings.TrimSpace(string(data)), c.tokenFlag)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode answer of %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}
