package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/credentials"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// The mirror remote (issue 22): a second git URL that receives a copy of
// the primary's branch after each push, asynchronously (mirrorloop.go).
// The primary stays the source of truth: nothing is fetched from the
// mirror. Its settings and records live beside the memory folder, out of
// the agent's reach: a mirror URL the agent could choose would let it copy
// the memory anywhere.
const (
	// mirrorFile holds the operator's per-agent mirror URL, or mirrorOff.
	mirrorFile = "mirror-url"
	mirrorOff  = "off"
	// mirrorLogFile (in records/) is the last DefaultMirrorLogKeep mirror
	// pushes, newest last, and the tip memfsd last put on the mirror.
	mirrorLogFile = "mirror-log.json"
)

// DefaultMirrorLogKeep bounds the mirror push log.
const DefaultMirrorLogKeep = 50

// Mirror states, as status shows them.
const (
	MirrorSynced   = "synced"   // the mirror has the primary's last known tip
	MirrorPending  = "pending"  // the primary moved on; a push is due
	MirrorPushing  = "pushing"  // a push is under way
	MirrorRetrying = "retrying" // it failed for now; retried with backoff
	MirrorError    = "error"    // a person must act (next_step); retried at the next primary push
	MirrorIdle     = "idle"     // no daemon runs for this agent (memfsd mirror status from disk)
)

// MirrorStatus is an agent's mirror as status shows it.
type MirrorStatus struct {
	URL           string     `json:"url"`    // credentials redacted
	Source        string     `json:"source"` // "agent" (admin socket) or "template" (--mirror-template)
	State         string     `json:"state"`
	LastPushedTip string     `json:"last_pushed_tip"`
	PrimaryTip    string     `json:"primary_tip"`
	Pending       int        `json:"pending"` // primary commits the mirror lacks
	LastPushAt    *time.Time `json:"last_push_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	LastError     *LastError `json:"last_error"`
	// Log is the last mirror pushes, newest last (GET .../mirror only).
	Log []MirrorPush `json:"log,omitempty"`
}

// MirrorPush is one entry of the mirror push log.
type MirrorPush struct {
	At       time.Time `json:"at"`
	Outcome  string    `json:"outcome"` // pushed, up_to_date or failed
	Tip      string    `json:"tip,omitempty"`
	From     string    `json:"from,omitempty"`
	Commits  int       `json:"commits"`
	Replaced bool      `json:"replaced,omitempty"` // the mirror's history was replaced (the primary's was)
	TookMS   int64     `json:"took_ms"`
	Class    string    `json:"class,omitempty"`
	Error    string    `json:"error,omitempty"`
	NextStep string    `json:"next_step,omitempty"`
}

// mirrorRecord is what records/mirror-log.json holds.
type mirrorRecord struct {
	// URL and Tip: the tip memfsd last put on the mirror at URL (the
	// evidence that lets a replaced primary history replace the mirror's).
	URL string       `json:"url"`
	Tip string       `json:"tip"`
	Log []MirrorPush `json:"log"`
}

// validateMirrorTemplate checks --mirror-template as --remote-template is
// checked; credentials in it become the mirror's.
func (c *Config) validateMirrorTemplate() error {
	u, err := parseTemplate("mirror-template", c.MirrorTemplate)
	if err != nil {
		return err
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && c.MirrorToken == "" {
			c.MirrorToken, c.MirrorUsername = p, u.User.Username()
		}
		u.User = nil
	}
	c.MirrorTemplate = strings.ReplaceAll(u.String(), templateProbe, agentPlaceholder)
	if c.RemoteTemplate != "" && c.MirrorTemplate == c.RemoteTemplate {
		return errors.New("config: mirror-template is the remote-template: the mirror must be another repository")
	}
	return nil
}

// checkMirrorURL validates an operator's per-agent mirror URL as a
// per-agent remote is: http(s), a host, no credentials (they would be
// stored), query or fragment.
func checkMirrorURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("mirror url %q: want http(s)://host[:port]/path, no credentials or query (the mirror's token comes from MEMFSD_MIRROR_TOKEN or --mirror-token-file)", RedactURL(raw))
	}
	return u.String(), nil
}

func mirrorPath(cfg *Config, id string) string {
	return filepath.Join(cfg.Home, "agents", id, mirrorFile)
}

// mirrorURLOf is agent id's mirror: the operator's per-agent setting (or
// "off"), else --mirror-template's; "" when none.
func mirrorURLOf(cfg *Config, id string) (u, source string) {
	if data, err := os.ReadFile(mirrorPath(cfg, id)); err == nil {
		switch v := strings.TrimSpace(string(data)); v {
		case mirrorOff:
			return "", ""
		case "":
		default:
			return v, "agent"
		}
	}
	if cfg.MirrorTemplate != "" {
		return strings.ReplaceAll(cfg.MirrorTemplate, agentPlaceholder, id), "template"
	}
	return "", ""
}

// SetMirrorOnDisk records an operator's mirror URL for agent id (the
// daemon's admin route and, with no daemon, `memfsd mirror set`).
func SetMirrorOnDisk(cfg *Config, id, raw string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	u, err := checkMirrorURL(raw)
	if err != nil {
		return err
	}
	if same(u, cfg.RemoteURL(id)) {
		return fmt.Errorf("mirror url %q is agent %s's primary remote: the mirror must be another repository", RedactURL(u), id)
	}
	if err := cfg.ensurePrivateDirs(id); err != nil {
		return err
	}
	return writeRecord(mirrorPath(cfg, id), []byte(u+"\n"))
}

// UnsetMirrorOnDisk turns agent id's mirror off (also one from
// --mirror-template). Set puts it back.
func UnsetMirrorOnDisk(cfg *Config, id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if err := cfg.ensurePrivateDirs(id); err != nil {
		return err
	}
	return writeRecord(mirrorPath(cfg, id), []byte(mirrorOff+"\n"))
}

func same(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// mirrorRemote is the mirror at u with its credentials: the mirror's own
// token, else the primary's when the mirror is on the primary's host
// (scheme, host and port), else none — a token is never sent to a host it
// was not given for.
func (a *Agent) mirrorRemote(u string) gitmem.Remote {
	c := a.cfg
	m := gitmem.Remote{URL: u}
	user := c.MirrorUsername
	if user == "" {
		user = c.Username
	}
	switch {
	case c.mirrorCreds != nil: // its token file's token at each request
		m.Auth = &credentials.Auth{Creds: c.mirrorCreds, Bearer: c.AuthScheme == AuthBearer, Username: user}
	case c.MirrorToken != "":
		m.Auth = c.authWith(user, c.MirrorToken)
	case c.hasToken() && sameHost(u, a.remote().URL):
		m.Auth = c.authFor()
	}
	return m
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// readMirrorRecord reads records/mirror-log.json (empty when missing).
func (a *Agent) readMirrorRecord() mirrorRecord {
	var rec mirrorRecord
	data, err := os.ReadFile(a.recordPath(mirrorLogFile))
	if err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

// appendMirrorLog adds an entry to the push log (the newest
// DefaultMirrorLogKeep stay) and, after a push, records the mirror's tip.
func (a *Agent) appendMirrorLog(u string, e MirrorPush) {
	rec := a.readMirrorRecord()
	if e.Outcome != "failed" {
		rec.URL, rec.Tip = u, e.Tip
	}
	rec.Log = append(rec.Log, e)
	if n := len(rec.Log) - DefaultMirrorLogKeep; n > 0 {
		rec.Log = rec.Log[n:]
	}
	data, _ := json.MarshalIndent(rec, "", "  ")
	if err := writeRecord(a.recordPath(mirrorLogFile), data); err != nil {
		a.log.Warn("mirror push log not written", "err", err)
	}
}

// ours is the tip memfsd last put on the mirror at u (zero when unknown).
func (a *Agent) ours(u string) plumbing.Hash {
	rec := a.readMirrorRecord()
	if rec.URL != u || rec.Tip == "" {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(rec.Tip)
}

// pushMirrorOnce is one mirror push of the primary's last known tip, with
// its log entry.
func (a *Agent) pushMirrorOnce(ctx context.Context, repo *gitmem.Repo, u string, force bool) (MirrorPush, error) {
	start := time.Now()
	res, err := repo.PushMirror(ctx, a.mirrorRemote(u), gitmem.MirrorOptions{Ours: a.ours(u), Force: force})
	e := MirrorPush{At: start.UTC(), Tip: hashString(res.Tip), From: hashString(res.From), Commits: res.Commits,
		Replaced: res.Replaced, TookMS: time.Since(start).Milliseconds()}
	switch {
	case err != nil:
		err = &mirrorError{err: retry.Wrap("mirror "+a.ID, err), agent: a.ID, home: a.cfg.HomeArg()}
		e.Outcome, e.Class, e.Error, e.NextStep = "failed", string(retry.ClassOf(err)), mirrorMessage(err), retry.NextStep(err)
	case res.Tip.IsZero():
		return e, nil // the primary has no commit yet: nothing to log
	case res.From == res.Tip:
		e.Outcome = "up_to_date"
	default:
		e.Outcome = "pushed"
	}
	a.appendMirrorLog(u, e)
	return e, err
}

// DefaultHome is memfsd's home when --home and MEMFSD_HOME are not set:
// ~/.memfsd.
func DefaultHome() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(h, ".memfsd")
}

// HomeArg is " --home <home>" for a command a next step tells a person to
// run, when the home is not the default ("" when it is): the command must
// reach the same home as the daemon that said it.
func (c *Config) HomeArg() string {
	if c == nil || c.Home == "" || filepath.Clean(c.Home) == DefaultHome() {
		return ""
	}
	return " --home " + shellQuote(c.Home)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// mirrorMessage is a failed mirror push's message with its class said
// once: the class is shown beside it (status, log), not inside it too.
func mirrorMessage(err error) string {
	var re *retry.Error
	if errors.As(err, &re) {
		return re.Op + ": " + re.Err.Error()
	}
	return err.Error()
}

// mirrorError is a failed mirror push; its next step is about the mirror,
// not the primary (whose commits are safe whatever the mirror does).
type mirrorError struct {
	err   error
	agent string
	home  string // HomeArg: the commands named carry --home when not the default
}

func (e *mirrorError) Error() string { return e.err.Error() }
func (e *mirrorError) Unwrap() error { return e.err }

// NextStep says what to do about the mirror (retry.Stepper).
func (e *mirrorError) NextStep() string {
	if errors.Is(e.err, gitmem.ErrMirrorDiverged) {
		return fmt.Sprintf("the mirror has commits the primary does not (someone pushed to it); memfsd does not overwrite them: look at them there, keep what matters on the primary, then run `memfsd mirror push --agent %s%s --force` to make the mirror a copy of the primary again", e.agent, e.home)
	}
	const safe = " The primary has every commit; the mirror catches up once this is fixed."
	switch retry.ClassOf(e.err) {
	case retry.ClassRetryable, retry.ClassNonFastForward:
		return "the mirror or the network failed for now; memfsd retries with backoff and pushes the primary's newest tip." + safe
	case retry.ClassAuth:
		return "the mirror refused the credentials: check MEMFSD_MIRROR_TOKEN / --mirror-token-file (the primary's token goes only to a mirror on the primary's host); tried again at the next primary push or `memfsd mirror push --agent " + e.agent + e.home + "`." + safe
	case retry.ClassNotFound:
		return fmt.Sprintf("the mirror has no such repository: create it on its host (empty) or fix the URL (`memfsd mirror set --agent %s%s --url ...` or --mirror-template)."+safe, e.agent, e.home)
	}
	return retry.NextStep(e.err) + safe
}

// ErrNoMirror is returned by mirror operations on an agent without one.
var ErrNoMirror = errors.New("no mirror is set for this agent (memfsd mirror set, or --mirror-template)")

// ReadMirrorStatus is agent id's mirror from disk, with no daemon (nil
// when it has none).
func ReadMirrorStatus(cfg *Config, id string) (*MirrorStatus, error) {
	a, err := New(cfg, id)
	if err != nil {
		return nil, err
	}
	u, source := mirrorURLOf(cfg, id)
	if u == "" {
		return nil, nil
	}
	repo, err := gitmem.Open(a.Dir(), gitmem.Remote{URL: cfg.RemoteURL(id)}, gitmem.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	st := a.diskMirrorStatus(repo, u, source)
	return &st, nil
}

// diskMirrorStatus is the mirror's status from the repository and the log.
func (a *Agent) diskMirrorStatus(repo *gitmem.Repo, u, source string) MirrorStatus {
	st := MirrorStatus{URL: RedactURL(u), Source: source, State: MirrorIdle}
	rec := a.readMirrorRecord()
	st.Log = rec.Log
	for i := len(rec.Log) - 1; i >= 0; i-- {
		if e := rec.Log[i]; e.Outcome != "failed" {
			t := e.At
			st.LastPushAt = &t
			break
		}
	}
	if n := len(rec.Log); n > 0 && rec.Log[n-1].Outcome == "failed" {
		e := rec.Log[n-1]
		st.LastError = &LastError{Class: e.Class, Message: e.Error, At: e.At, Attempts: 1, NextStep: e.NextStep}
	}
	if pos, err := repo.MirrorPosition(); err == nil {
		st.PrimaryTip, st.LastPushedTip, st.Pending = hashString(pos.Primary), hashString(pos.Mirror), pos.Pending
	}
	return st
}

// PushMirrorOnDisk pushes agent id's mirror once, with no daemon.
func PushMirrorOnDisk(ctx context.Context, cfg *Config, id string, force bool) (MirrorPush, error) {
	a, err := New(cfg, id)
	if err != nil {
		return MirrorPush{}, err
	}
	u, _ := mirrorURLOf(cfg, id)
	if u == "" {
		return MirrorPush{}, fmt.Errorf("mirror push %s: %w", id, ErrNoMirror)
	}
	repo, err := gitmem.Open(a.Dir(), a.remote(), gitmem.Options{Logger: cfg.Logger})
	if err != nil {
		return MirrorPush{}, fmt.Errorf("mirror push %s: %w", id, err)
	}
	defer repo.Close()
	return a.pushMirrorOnce(ctx, repo, u, force)
}
