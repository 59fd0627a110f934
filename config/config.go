// Package config is what every agent of one memfsd home shares: the home,
// the remote (the Letta layout, a URL template, or the embedded remote),
// the token and how it is sent, the commit identities, the mirror's
// template, and the guards' settings. Validate checks it and fills its
// defaults once; from then on it is shared by every agent and only read.
// It sits below package agent, which keeps Config as an alias.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/memfsd/memfsd/credentials"
	"github.com/memfsd/memfsd/embedded"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/remoteurl"
	"github.com/memfsd/memfsd/retry"
	"github.com/memfsd/memfsd/search"

	"github.com/memfsd/memfsd/internal/fsperm"
)

// DefaultUsername is the HTTP Basic user sent with the token.
const DefaultUsername = "memfsd"

// Config is what every agent of one memfsd home shares.
type Config struct {
	Home    string // <home>; agents live in <home>/agents/<id>/memory
	BaseURL string // remote base; empty = the embedded default under <home>/remote
	// RemoteTemplate, e.g. https://git.example.com/memory/{agent}.git, is
	// the agent's remote with {agent} replaced by its id (any git host);
	// it replaces BaseURL's Letta layout.
	RemoteTemplate string
	// MirrorTemplate, e.g. https://github.com/acme/{agent}-memory.git, is
	// every agent's mirror remote ({agent} as in RemoteTemplate): the
	// primary's commits are copied there after each push (package mirror).
	MirrorTemplate string
	// MirrorToken and MirrorUsername authenticate to the mirror; without a
	// MirrorToken the primary's token goes only to a mirror on the
	// primary's host.
	MirrorToken    string
	MirrorUsername string
	// MirrorTokenFile (--mirror-token-file) holds the mirror's token
	// instead, re-read when it changes like TokenFile.
	MirrorTokenFile string
	// AuthScheme is how the token is sent: "basic" (user Username,
	// password the token; the default) or "bearer".
	AuthScheme string
	// CreateRemote initialises an agent whose repository does not exist
	// on the host yet (404 on the first clone) with the default blocks and
	// creates it by pushing (hosts that create repositories on push).
	CreateRemote bool
	Token        string // password for HTTP Basic; never logged or stored
	// TokenFile (--token-file) holds the token instead: read by Validate,
	// re-read when it changes and after an auth failure (credentials.Source).
	TokenFile string
	Username  string
	// AuthorName and AuthorEmail override "<agent> <<agent>@memfsd.local>".
	AuthorName  string
	AuthorEmail string
	// OperatorName and OperatorEmail author the operator's commits
	// (block set, read-only blocks put back, deletions restored); default
	// DefaultOperatorName <DefaultOperatorName@memfsd.local>.
	OperatorName  string
	OperatorEmail string
	NoFsync       bool
	LockWait      time.Duration
	// PersonGitWait bounds how long commits and syncs wait on a person's
	// git operation in the folder (default DefaultPersonGitWait).
	PersonGitWait time.Duration
	Retry         retry.Policy
	// SecretPatterns are refused in memory-tool writes (default:
	// memtool.DefaultSecretPatterns); NoSecretGuard switches that off.
	SecretPatterns []memtool.SecretPattern
	NoSecretGuard  bool
	// MaxFileBytes caps a file a direct write commits (0:
	// DefaultMaxFileBytes); a bigger one is held with a reminder.
	MaxFileBytes int64
	// NoFrontMatterRules turns off letta-code's front-matter rules (SPEC
	// §9), for memory folders that are not letta-code's.
	NoFrontMatterRules bool
	Logger             *slog.Logger
	// SearchPool bounds the memory of every agent's search index together
	// (default: search.DefaultPoolBytes).
	SearchPool *search.Pool

	validated bool                // Validate ran: the config is shared read-only from then on
	creds     *credentials.Source // TokenFile's token, nil without one
	// mirrorCreds is MirrorTokenFile's token, nil without one.
	mirrorCreds *credentials.Source
}

// idPattern is the one rule for agent ids, everywhere (flags, routes,
// folders on disk): letters, digits, . _ -, not starting with . or -
// (no hidden folder, no .git, nothing a command line takes for a flag).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// ErrBadID is returned for an agent id outside idPattern.
var ErrBadID = errors.New("bad agent id")

// ValidateID checks an agent id.
func ValidateID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w %q: want 1-128 characters from A-Z a-z 0-9 . _ -, not starting with . or -", ErrBadID, id)
	}
	return nil
}

// Validate checks the configuration and fills defaults, once: after it the
// config is shared by every agent and only read.
func (c *Config) Validate() error {
	if c.validated {
		return nil
	}
	if c.Home == "" {
		return errors.New("config: home is empty")
	}
	abs, err := filepath.Abs(c.Home)
	if err != nil {
		return fmt.Errorf("config: home: %w", err)
	}
	c.Home = abs
	if c.Username == "" {
		c.Username = DefaultUsername
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SearchPool == nil {
		c.SearchPool = search.NewPool(0)
	}
	if c.Retry.Initial <= 0 {
		c.Retry = retry.DefaultPolicy()
	}
	if c.SecretPatterns == nil {
		c.SecretPatterns = memtool.DefaultSecretPatterns()
	}
	switch c.AuthScheme {
	case "":
		c.AuthScheme = AuthBasic
	case AuthBasic, AuthBearer:
	default:
		return fmt.Errorf("config: auth-scheme %q: want basic or bearer", c.AuthScheme)
	}
	if c.RemoteTemplate != "" {
		if c.BaseURL != "" {
			return errors.New("config: base-url and remote-template both set: give one (the template replaces the Letta layout)")
		}
		if err := c.validateTemplate(); err != nil {
			return err
		}
	}
	if c.MirrorTemplate != "" {
		if err := c.validateMirrorTemplate(); err != nil {
			return err
		}
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: base-url %q: want http(s)://host[:port][/prefix]", remoteurl.Redact(c.BaseURL))
		}
		if u.RawQuery != "" || u.Fragment != "" {
			// The agent's path is appended to the base: a query would end
			// up in the middle, and a token in it in .git/config.
			return fmt.Errorf("config: base-url %q: a query string or fragment is not allowed; put the token in MEMFSD_TOKEN or --token-file", remoteurl.Redact(c.BaseURL))
		}
		c.takeUserInfo(u)
		c.BaseURL = strings.TrimRight(u.String(), "/")
	}
	if c.TokenFile != "" {
		creds, err := credentials.New(c.TokenFile, c.Token, c.Logger)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		c.creds = creds
	}
	if c.MirrorTokenFile != "" {
		creds, err := credentials.New(c.MirrorTokenFile, c.MirrorToken, c.Logger)
		if err != nil {
			return fmt.Errorf("config: mirror %w", err)
		}
		c.mirrorCreds = creds
	}
	c.validated = true
	return nil
}

// takeUserInfo moves credentials in a URL to the auth header and out of the
// URL, so they never reach .git/config, logs or status.
func (c *Config) takeUserInfo(u *url.URL) {
	if u.User == nil {
		return
	}
	if p, ok := u.User.Password(); ok && c.Token == "" {
		c.Token = p
		if n := u.User.Username(); n != "" {
			c.Username = n
		}
	}
	u.User = nil
}

// Auth schemes for the token.
const (
	AuthBasic  = "basic"
	AuthBearer = "bearer"
)

// validateTemplate checks --remote-template: http(s), a host, {agent} in
// the path only (never in the host, credentials, query or fragment), and
// moves credentials in it to the auth header.
func (c *Config) validateTemplate() error {
	u, err := remoteurl.ParseTemplate("remote-template", c.RemoteTemplate)
	if err != nil {
		return err
	}
	c.takeUserInfo(u)
	c.RemoteTemplate = strings.ReplaceAll(u.String(), remoteurl.Probe, remoteurl.Placeholder)
	return nil
}

// validateMirrorTemplate checks --mirror-template as --remote-template is
// checked; credentials in it become the mirror's.
func (c *Config) validateMirrorTemplate() error {
	u, err := remoteurl.ParseTemplate("mirror-template", c.MirrorTemplate)
	if err != nil {
		return err
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && c.MirrorToken == "" {
			c.MirrorToken, c.MirrorUsername = p, u.User.Username()
		}
		u.User = nil
	}
	c.MirrorTemplate = strings.ReplaceAll(u.String(), remoteurl.Probe, remoteurl.Placeholder)
	if c.RemoteTemplate != "" && c.MirrorTemplate == c.RemoteTemplate {
		return errors.New("config: mirror-template is the remote-template: the mirror must be another repository")
	}
	return nil
}

// MirrorTemplateURL is --mirror-template for agent id ("" without one).
func (c *Config) MirrorTemplateURL(id string) string {
	if c.MirrorTemplate == "" {
		return ""
	}
	return strings.ReplaceAll(c.MirrorTemplate, remoteurl.Placeholder, id)
}

// MemoryDir is the agent's work tree.
func (c *Config) MemoryDir(id string) string {
	return filepath.Join(c.Home, "agents", id, "memory")
}

// RemoteURL is the agent's state.git.
func (c *Config) RemoteURL(id string) string {
	if c.RemoteTemplate != "" {
		return strings.ReplaceAll(c.RemoteTemplate, remoteurl.Placeholder, id)
	}
	if c.BaseURL == "" {
		return embedded.URL(filepath.Join(c.Home, "remote", "v1", "git", id, "state.git"))
	}
	return c.BaseURL + "/v1/git/" + id + "/state.git"
}

// Remote is agent id's remote, with the token for a remote that is not
// the embedded one.
func (c *Config) Remote(id string) gitmem.Remote {
	r := gitmem.Remote{URL: c.RemoteURL(id)}
	if c.HasToken() && (c.BaseURL != "" || c.RemoteTemplate != "") {
		r.Auth = c.AuthFor()
	}
	return r
}

// HasToken reports a token to send, now or once the token file has one.
func (c *Config) HasToken() bool { return c.Token != "" || c.creds != nil }

// Credentials is the token file's live token (nil without --token-file):
// the daemon watches it, status shows its problem.
func (c *Config) Credentials() *credentials.Source { return c.creds }

// MirrorCredentials is the mirror's token file's live token (nil without
// --mirror-token-file).
func (c *Config) MirrorCredentials() *credentials.Source { return c.mirrorCreds }

// AuthFor is the token sent the configured way: with a token file, the
// token current at each request (so a rotation needs no restart).
func (c *Config) AuthFor() transport.AuthMethod {
	if c.creds != nil {
		return &credentials.Auth{Creds: c.creds, Bearer: c.AuthScheme == AuthBearer, Username: c.Username}
	}
	return c.AuthWith(c.Username, c.Token)
}

// AuthWith is user and token sent the configured way.
func (c *Config) AuthWith(user, token string) transport.AuthMethod {
	if c.AuthScheme == AuthBearer {
		return &githttp.TokenAuth{Token: token}
	}
	return &githttp.BasicAuth{Username: user, Password: token}
}

// Author is agent id's commit signature (the configured author, if any).
func (c *Config) Author(id string) gitmem.Signature {
	s := gitmem.Signature{Name: id, Email: id + "@memfsd.local"}
	if c.AuthorName != "" {
		s.Name = c.AuthorName
	}
	if c.AuthorEmail != "" {
		s.Email = c.AuthorEmail
	}
	return s
}

// DefaultOperatorName is the operator identity's default name.
const DefaultOperatorName = "memfsd-operator"

// Operator signs the operator's commits (the configured identity, if any).
func (c *Config) Operator() gitmem.Signature {
	s := gitmem.Signature{Name: DefaultOperatorName, Email: DefaultOperatorName + "@memfsd.local"}
	if c.OperatorName != "" {
		s.Name = c.OperatorName
	}
	if c.OperatorEmail != "" {
		s.Email = c.OperatorEmail
	}
	return s
}

// EnsurePrivateDirs creates <home>, agents/ and agents/<id>/ as 0700
// whatever the umask (0710 with --share-group: fsperm.Path), and sets
// that mode when they exist.
func (c *Config) EnsurePrivateDirs(id string) error {
	perm := fsperm.Path()
	for _, d := range []string{c.Home, filepath.Join(c.Home, "agents"), filepath.Join(c.Home, "agents", id)} {
		if err := os.MkdirAll(d, perm); err != nil {
			return err
		}
		if err := os.Chmod(d, perm); err != nil {
			return err
		}
	}
	return nil
}
