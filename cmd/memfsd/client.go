package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// apiClient talks to a running daemon on its listen address.
type apiClient struct {
	base string
	http *http.Client
}

func newAPIClient(addr string, timeout time.Duration) *apiClient {
	tr := &http.Transport{}
	base := "http://" + addr
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		base = "http://memfsd"
	}
	return &apiClient{base: base, http: &http.Client{Transport: tr, Timeout: timeout}}
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
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode answer of %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}
