// Package agent is one managed agent: its memory folder, its remote and the
// sync that ties them (clone or pull, commit, push).
package agent

import (
	"github.com/memfsd/memfsd/config"
	"github.com/memfsd/memfsd/remoteurl"
)

// Config is what every agent of one memfsd home shares (package config).
type Config = config.Config

// DefaultUsername is the HTTP Basic user sent with the token.
const DefaultUsername = config.DefaultUsername

// Auth schemes for the token.
const (
	AuthBasic  = config.AuthBasic
	AuthBearer = config.AuthBearer
)

// DefaultOperatorName is the operator identity's default name.
const DefaultOperatorName = config.DefaultOperatorName

// ErrBadID is returned for an agent id outside the rule config.ValidateID
// checks.
var ErrBadID = config.ErrBadID

// ValidateID checks an agent id (config.ValidateID).
func ValidateID(id string) error { return config.ValidateID(id) }

// RedactURL strips credentials from a URL for display (remoteurl.Redact):
// nothing of a token reaches a log, a status or an error.
func RedactURL(raw string) string { return remoteurl.Redact(raw) }

// DefaultHome is memfsd's home when --home and MEMFSD_HOME are not set
// (config.DefaultHome).
func DefaultHome() string { return config.DefaultHome() }
