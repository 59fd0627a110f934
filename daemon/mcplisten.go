package daemon

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/mcpserver"
	"github.com/memfsd/memfsd/records"
)

// MCPTokenName is the file, in <home>/agents/<id>/ (the operator's, out of
// the agent's folder), holding agent id's bearer token for --mcp-listen.
const MCPTokenName = "mcp-token"

// MCPTokenPath is agent id's token for --mcp-listen.
func MCPTokenPath(home, id string) string {
	return filepath.Join(home, "agents", id, MCPTokenName)
}

// MCPListenPath is where --mcp-listen serves agent id's MCP (streamable
// HTTP), for the agent's token alone.
func MCPListenPath(id string) string { return "/agents/" + id + "/mcp" }

// maxMCPToken bounds a token file read: a token is a word, not a file.
const maxMCPToken = 4 << 10

// CheckMCPListen refuses an --mcp-listen address that is not TCP on
// loopback, unless insecure: the tokens travel in clear.
func CheckMCPListen(addr string, insecure bool) error {
	if !IsTCP(addr) {
		return fmt.Errorf("flag --mcp-listen: %s is a unix socket: each agent's own socket (<home>/agents/<id>/%s) serves MCP at %s already; --mcp-listen is for TCP clients, e.g. 127.0.0.1:8770", addr, AgentSocketName, MCPPath)
	}
	if !IsLoopback(addr) && !insecure {
		return fmt.Errorf("flag --mcp-listen: %s is not a loopback address: the agents' tokens and memory would cross the network in clear; listen on 127.0.0.1:PORT (a TLS proxy in front for other hosts), or pass --insecure-listen to accept the risk", addr)
	}
	return nil
}

// mcpListen is what --mcp-listen serves: each agent's MCP host behind
// its own token.
type mcpListen struct {
	mu       sync.Mutex
	handlers map[*mcpserver.Host]http.Handler
}

// ServeMCPTokens gives every agent managed from now on a token file for
// --mcp-listen (MCPTokenPath, 0600, 32 random bytes in hex) when its own
// socket opens, keeping one already there. Call it with
// ServeAgentSockets, before Manage.
func (d *Daemon) ServeMCPTokens() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.socks.mcpTokens = true
}

// ensureMCPToken is openAgentSocket's: agent id's token, when
// ServeMCPTokens was called; a failure is logged (its requests are 401).
// d.mu is held.
func (d *Daemon) ensureMCPToken(id string) {
	if !d.socks.mcpTokens {
		return
	}
	if err := EnsureMCPToken(d.cfg.Home, id); err != nil {
		d.log.Error("mcp-listen: no token for the agent: its /mcp on --mcp-listen answers 401; fix the cause and restart memfsd", "agent", id, "err", err)
	}
}

// EnsureMCPToken writes agent id's token file on home unless there is one.
func EnsureMCPToken(home, id string) error {
	if err := agent.ValidateID(id); err != nil {
		return err
	}
	p := MCPTokenPath(home, id)
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return err // there (checked at each request), or unreadable
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("mcp token for agent %s: %w", id, err)
	}
	if err := records.Write(p, []byte(hex.EncodeToString(b[:])+"\n")); err != nil {
		return fmt.Errorf("mcp token for agent %s: write %s: %w; check that the home is writable and start again", id, p, err)
	}
	return nil
}

// ReadMCPToken reads agent id's token: a regular file (no link followed)
// of one word. Read at each request, so a replaced file takes effect at
// once.
func ReadMCPToken(home, id string) (string, error) {
	p := MCPTokenPath(home, id)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxMCPToken+1))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if len(data) > maxMCPToken || tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s does not hold one token (one word, under %d bytes)", p, maxMCPToken)
	}
	return tok, nil
}

// MCPListenHandler serves each managed agent's MCP at MCPListenPath(id),
// to requests with that agent's token (ReadMCPToken) as Authorization:
// Bearer; any other request, another agent's token included, is 401 and
// reaches nothing. Needs ServeAgentSockets (the agents' MCP hosts).
func (d *Daemon) MCPListenHandler() http.Handler {
	l := &mcpListen{handlers: map[*mcpserver.Host]http.Handler{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/agents/")
		id, tail, _ := strings.Cut(rest, "/")
		if !ok || tail != "mcp" || agent.ValidateID(id) != nil {
			writeError(w, http.StatusNotFound, fmt.Errorf("not found: %s; each agent's MCP is at /agents/ID/mcp, with its own token (the file agents/ID/%s in memfsd's home) as Authorization: Bearer", r.URL.Path, MCPTokenName))
			return
		}
		got, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		want, err := ReadMCPToken(d.cfg.Home, id)
		if !hasBearer || err != nil || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				d.log.Warn("mcp-listen: the agent's token file cannot be used; its requests are refused", "agent", id, "err", err)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="memfsd"`)
			writeError(w, http.StatusUnauthorized, fmt.Errorf("unauthorized: %s needs agent %s's own token (the file agents/%s/%s in memfsd's home) as Authorization: Bearer", MCPListenPath(id), id, id, MCPTokenName))
			return
		}
		h := l.handler(d.mcpHost(id))
		if h == nil {
			writeError(w, http.StatusServiceUnavailable, fmt.Errorf("agent %s is not served now (not managed, or memfsd is shutting down); add it with memfsd run --agent %s or PUT /v1/agents/%s on the admin socket", id, id, id))
			return
		}
		// A session's event stream lives as long as the session.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		h.ServeHTTP(w, r)
	})
}

// mcpHost is agent id's MCP host (nil when none).
func (d *Daemon) mcpHost(id string) *mcpserver.Host {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.socks.hosts[id]
}

// handler is host's streamable HTTP handler for this listener, made once
// (its sessions live in it).
func (l *mcpListen) handler(host *mcpserver.Host) http.Handler {
	if host == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.handlers[host]
	if h == nil {
		h = host.Handler()
		l.handlers[host] = h
	}
	return h
}
