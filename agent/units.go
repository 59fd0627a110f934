package agent

import (
	"context"
	"log/slog"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/memfsd/memfsd/gitmem"
)

// What the units built on an agent (packages mirror and shared) use of it.
// They sit above agent: agent never imports them, the daemon wires them.

// Repository is the agent's repository (nil before its first clone).
func (a *Agent) Repository() *gitmem.Repo { return a.repository() }

// Remote is the agent's primary remote with its credentials.
func (a *Agent) Remote() gitmem.Remote { return a.remote() }

// Config is the configuration the agent was made with (read-only).
func (a *Agent) Config() *Config { return a.cfg }

// Logger is the agent's logger (with its id).
func (a *Agent) Logger() *slog.Logger { return a.log }

// Lifetime is a context that ends when Close begins.
func (a *Agent) Lifetime() context.Context { return a.ctx }

// RecordPath is the path of the agent's record name, in
// <home>/agents/<id>/records: out of the agent's reach.
func (a *Agent) RecordPath(name string) string { return a.recordPath(name) }

// WriteRecord replaces the record file p with data, atomically.
func WriteRecord(p string, data []byte) error { return writeRecord(p, data) }

// HashString is h's hex form, "" for the zero hash.
func HashString(h interface {
	IsZero() bool
	String() string
}) string {
	return hashString(h)
}

// HasToken says whether a token for the primary is configured.
func (c *Config) HasToken() bool { return c.hasToken() }

// AuthFor is the primary's token sent the configured way (the token
// file's current token at each request when there is one).
func (c *Config) AuthFor() transport.AuthMethod { return c.authFor() }

// AuthWith is user and token sent the configured way.
func (c *Config) AuthWith(user, token string) transport.AuthMethod { return c.authWith(user, token) }

// EnsurePrivateDirs makes the home, its agents folder and agent id's
// folder, each 0700.
func (c *Config) EnsurePrivateDirs(id string) error { return c.ensurePrivateDirs(id) }

// MirrorTemplateURL is --mirror-template for agent id ("" without one).
func (c *Config) MirrorTemplateURL(id string) string {
	if c.MirrorTemplate == "" {
		return ""
	}
	return strings.ReplaceAll(c.MirrorTemplate, agentPlaceholder, id)
}
