// Package agent is one managed agent: its memory folder, its remote and the
// sync that ties them (clone or pull, commit, push).
package agent

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

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/retry"
)

// DefaultUsername is the HTTP Basic user sent with the token.
const DefaultUsername = "memfsd"

// Config is what every agent of one memfsd home shares.
type Config struct {
	Home     string // <home>; agents live in <home>/agents/<id>/memory
	BaseURL  string // remote base; empty = the embedded default under <home>/remote
	Token    string // password for HTTP Basic; never logged or stored
	Username string
	// AuthorName and AuthorEmail override "<agent> <<agent>@memfsd.local>".
	AuthorName  string
	AuthorEmail string
	NoFsync     bool
	LockWait    time.Duration
	Retry       retry.Policy
	// SecretPatterns are refused in memory-tool writes (default:
	// memtool.DefaultSecretPatterns); NoSecretGuard switches that off.
	SecretPatterns []memtool.SecretPattern
	NoSecretGuard  bool
	Logger         *slog.Logger

	validated bool // Validate ran: the config is shared read-only from then on
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// ErrBadID is returned for an agent id outside ^[A-Za-z0-9._-]{1,128}$.
var ErrBadID = errors.New("bad agent id")

// ValidateID checks an agent id.
func ValidateID(id string) error {
	if !idPattern.MatchString(id) || id == "." || id == ".." {
		return fmt.Errorf("%w %q: want 1-128 characters from A-Z a-z 0-9 . _ - (not . or ..)", ErrBadID, id)
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
	if c.Retry.Initial <= 0 {
		c.Retry = retry.DefaultPolicy()
	}
	if c.SecretPatterns == nil {
		c.SecretPatterns = memtool.DefaultSecretPatterns()
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: base-url %q: want http(s)://host[:port][/prefix]", RedactURL(c.BaseURL))
		}
		if u.RawQuery != "" || u.Fragment != "" {
			// The agent's path is appended to the base: a query would end
			// up in the middle, and a token in it in .git/config.
			return fmt.Errorf("config: base-url %q: a query string or fragment is not allowed; put the token in MEMFSD_TOKEN or --token-file", RedactURL(c.BaseURL))
		}
		// Credentials in the URL move to the auth header and out of the URL,
		// so they never reach .git/config.
		if u.User != nil {
			if p, ok := u.User.Password(); ok && c.Token == "" {
				c.Token = p
				if n := u.User.Username(); n != "" {
					c.Username = n
				}
			}
			u.User = nil
		}
		c.BaseURL = strings.TrimRight(u.String(), "/")
	}
	c.validated = true
	return nil
}

// RedactURL strips credentials from a URL for display: the user-info and
// every query value (a token in ?access_token= is as secret as a password).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable url>"
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"redacted"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// MemoryDir is the agent's work tree.
func (c *Config) MemoryDir(id string) string {
	return filepath.Join(c.Home, "agents", id, "memory")
}

// RemoteURL is the agent's state.git.
func (c *Config) RemoteURL(id string) string {
	if c.BaseURL == "" {
		return gitmem.EmbeddedURL(filepath.Join(c.Home, "remote", "v1", "git", id, "state.git"))
	}
	return c.BaseURL + "/v1/git/" + id + "/state.git"
}

func (c *Config) remote(id string) gitmem.Remote {
	r := gitmem.Remote{URL: c.RemoteURL(id)}
	if c.Token != "" && c.BaseURL != "" {
		r.Auth = &githttp.BasicAuth{Username: c.Username, Password: c.Token}
	}
	return r
}

func (c *Config) author(id string) gitmem.Signature {
	s := gitmem.Signature{Name: id, Email: id + "@memfsd.local"}
	if c.AuthorName != "" {
		s.Name = c.AuthorName
	}
	if c.AuthorEmail != "" {
		s.Email = c.AuthorEmail
	}
	return s
}

// ensurePrivateDirs creates <home>, agents/ and agents/<id>/ as 0700
// whatever the umask, and tightens them when they exist.
func (c *Config) ensurePrivateDirs(id string) error {
	for _, d := range []string{c.Home, filepath.Join(c.Home, "agents"), filepath.Join(c.Home, "agents", id)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}
