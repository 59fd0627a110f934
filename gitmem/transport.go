package gitmem

import (
	"net/http"

	"github.com/memfsd/memfsd/wire"

	// The embedded remote's memfsd:// scheme works wherever a Repo does.
	_ "github.com/memfsd/memfsd/embedded"
)

// The client side of git's protocol (sessions, HTTP deadlines, packs and
// ref updates sent) is package wire; these names keep gitmem's API as it
// was for its callers.

// Defaults of HTTPTimeouts.
const (
	DefaultDialTimeout           = wire.DefaultDialTimeout
	DefaultTLSHandshakeTimeout   = wire.DefaultTLSHandshakeTimeout
	DefaultResponseHeaderTimeout = wire.DefaultResponseHeaderTimeout
	DefaultIdleTimeout           = wire.DefaultIdleTimeout
)

// HTTPTimeouts bound every HTTP exchange with a remote (see wire.HTTPTimeouts).
type HTTPTimeouts = wire.HTTPTimeouts

// DefaultHTTPTimeouts are the Default* values.
func DefaultHTTPTimeouts() HTTPTimeouts { return wire.DefaultHTTPTimeouts() }

// NewHTTPClient is an http.Client with these deadlines (see wire.NewHTTPClient).
func NewHTTPClient(t HTTPTimeouts) *http.Client { return wire.NewHTTPClient(t) }

// InstallHTTPClient installs, process-wide, a client with these deadlines
// for go-git's http and https transports (see wire.InstallHTTPClient).
func InstallHTTPClient(t HTTPTimeouts) { wire.InstallHTTPClient(t) }
