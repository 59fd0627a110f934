// Package credentials is a token read from a file and re-read when the
// file changes, and the go-git auth that sends the token current at each
// request.
package credentials

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/memfsd/memfsd/retry"
)

// tokenSettle is how long the token file's folder must be quiet before it
// is re-read: an in-place rewrite truncates before it writes, and reading
// between the two would see an empty file.
const tokenSettle = 100 * time.Millisecond

// Source is the token of --token-file, re-read when the file changes
// (a watch on its folder, a cheap stat before each sync, and after each
// auth failure), so a rotated token is used by the next sync of every agent
// without a restart. An empty or unreadable file keeps the last good token.
// Safe for concurrent use; the token is never logged.
type Source struct {
	file string
	log  *slog.Logger

	cur atomic.Pointer[tokenState] // what requests send

	mu      sync.Mutex  // serialises re-reads
	stamp   os.FileInfo // the file as last read well (nil: read again next time)
	problem string      // why the file's token is not in use ("" when it is)

	// changed gets a signal (never blocking) when the token in use
	// changes or the file's problem clears (Changed).
	changed chan struct{}
}

type tokenState struct {
	token string
	gen   uint64 // bumped on each change: "did it change since this sync began"
}

// New reads file (the fallback token, e.g. MEMFSD_TOKEN, stands
// while the file is empty). An unreadable file is an error at start: there
// is no last good token to keep; so is an empty one without a fallback,
// which would otherwise surface later as the remote's auth failure.
func New(file, fallback string, log *slog.Logger) (*Source, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Source{file: file, log: log, changed: make(chan struct{}, 1)}
	c.cur.Store(&tokenState{token: fallback})
	tok, fi, err := c.read()
	if errors.Is(err, errEmptyToken) && fallback == "" {
		return nil, fmt.Errorf("token-file %s: %w and there is no other token: put the token in it (one line) and start again; once memfsd runs it re-reads the file without a restart", file, err)
	}
	if err != nil && !errors.Is(err, errEmptyToken) {
		return nil, fmt.Errorf("token-file %s: %w", file, err)
	}
	if err != nil {
		c.noteProblem(err)
		return c, nil
	}
	c.cur.Store(&tokenState{token: tok})
	c.stamp = fi
	return c, nil
}

var errEmptyToken = errors.New("the file is empty")

// read returns the file's token and what it was read from.
func (c *Source) read() (string, os.FileInfo, error) {
	f, err := os.Open(c.file) // follows symlinks: Kubernetes' ..data swap
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	data, err := readSmall(f)
	if err != nil {
		return "", nil, err
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", nil, errEmptyToken
	}
	return tok, fi, nil
}

// readSmall reads a token file, refusing one too large to be a token.
func readSmall(f *os.File) ([]byte, error) {
	const max = 64 << 10
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && len(data) > max {
		err = fmt.Errorf("larger than %d bytes: not a token", max)
	}
	return data, err
}

// File is the token file's path.
func (c *Source) File() string { return c.file }

// Token is the token to send now.
func (c *Source) Token() string { return c.cur.Load().token }

// Generation changes whenever the token does.
func (c *Source) Generation() uint64 { return c.cur.Load().gen }

// Problem is why the file's current content is not in use (empty,
// unreadable), naming the file and never the content; "" when it is.
func (c *Source) Problem() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.problem
}

// Refresh re-reads the file when a stat says it changed (another inode,
// size or modification time) and returns the token's generation: the cheap
// check before each sync, for when the watch missed it.
func (c *Source) Refresh() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fi, err := os.Stat(c.file); err != nil || c.stamp == nil || !sameStamp(c.stamp, fi) {
		c.reloadLocked()
	}
	return c.Generation()
}

// Reload re-reads the file whatever a stat says (an edit that kept size
// and time) and returns the token's generation.
func (c *Source) Reload() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reloadLocked()
	return c.Generation()
}

func sameStamp(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func (c *Source) reloadLocked() {
	tok, fi, err := c.read()
	if err != nil {
		c.stamp = nil
		c.noteProblem(err)
		return
	}
	c.stamp = fi
	if c.problem != "" {
		c.problem = ""
		c.log.Info("token file readable again", "token_file", c.file)
		c.signal()
	}
	old := c.cur.Load()
	if tok == old.token {
		return
	}
	c.cur.Store(&tokenState{token: tok, gen: old.gen + 1})
	c.log.Info("token file changed: the next request of every agent sends the new token", "token_file", c.file)
	c.signal()
}

func (c *Source) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Changed signals (for one reader) that the token in use changed or the
// file's problem cleared: what failed for the old token can be tried
// again at once.
func (c *Source) Changed() <-chan struct{} { return c.changed }

// noteProblem keeps the last good token and warns once per distinct cause.
func (c *Source) noteProblem(err error) {
	p := fmt.Sprintf("token file %s cannot be used (%v): the last good token is kept; put a token in it, memfsd re-reads it without a restart", c.file, err)
	if p == c.problem {
		return
	}
	c.problem = p
	c.log.Warn("token file cannot be used; keeping the last good token", "token_file", c.file, "err", err)
}

// Watch re-reads the file whenever its folder changes, until ctx ends. The
// folder, not the file: secrets managers and Kubernetes replace the file
// by rename or by swapping a ..data symlink, which a watch on the file
// itself would not follow. Without a watch (inotify limits) the stat
// before each sync still notices.
func (c *Source) Watch(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(filepath.Dir(c.file))
		if err != nil {
			w.Close()
		}
	}
	if err != nil {
		c.log.Warn("cannot watch the token file's folder: it is checked before each sync instead", "token_file", c.file, "err", err)
		return
	}
	defer w.Close()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.Events:
			settle.Reset(tokenSettle)
		case err := <-w.Errors:
			// An overflow lost events: read again to be sure.
			c.log.Debug("token file watch", "err", err)
			settle.Reset(tokenSettle)
		case <-settle.C:
			c.Reload()
		}
	}
}

// Auth sends the token current at each request: the repository keeps one
// auth for its life, and a rotated token must reach the next sync.
type Auth struct {
	Creds    *Source
	Bearer   bool // "Authorization: Bearer", else basic auth
	Username string
}

// SetAuth implements go-git's http.AuthMethod.
func (a *Auth) SetAuth(r *http.Request) {
	if a.Bearer {
		r.Header.Set("Authorization", "Bearer "+a.Creds.Token())
		return
	}
	r.SetBasicAuth(a.Username, a.Creds.Token())
}

// Name implements transport.AuthMethod.
func (a *Auth) Name() string {
	if a.Bearer {
		return "http-token-auth"
	}
	return "http-basic-auth"
}

// String never shows the token.
func (a *Auth) String() string {
	return a.Name() + " - " + a.Username + ":*******"
}

// WithFreshToken runs a network operation with the token as of now (the
// cheap stat first); refused as auth, it re-reads the file and, when the
// token changed since the operation began (the watch had not noticed
// yet), runs it once more (saying so on log). Refused again with the same
// token, the error says the file was re-read.
func (c *Source) WithFreshToken(log *slog.Logger, op func() error) error {
	gen := c.Refresh()
	err := op()
	if retry.ClassOf(err) != retry.ClassAuth {
		return err
	}
	if c.Reload() != gen {
		log.Info("the server refused the token; the token file had changed: trying again with the new one", "token_file", c.File())
		if err = op(); retry.ClassOf(err) != retry.ClassAuth {
			return err
		}
	}
	return &tokenRefused{err: err, file: c.File()}
}

// tokenRefused is an auth failure after the token file was re-read.
type tokenRefused struct {
	err  error
	file string
}

func (e *tokenRefused) Error() string {
	return fmt.Sprintf("%v (token file %s re-read: its token is refused)", e.err, e.file)
}

func (e *tokenRefused) Unwrap() error { return e.err }

// NextStep implements retry.Stepper.
func (e *tokenRefused) NextStep() string {
	return "the server refuses the token in " + e.file + " (re-read just now): put a valid token in that file (rewrite it or rename a new one over it); memfsd re-reads it without a restart, and commits stay local until then"
}
