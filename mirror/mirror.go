// Package mirror is an agent's mirror remote (issue 22): a second git URL
// that receives a copy of the primary's branch after each push,
// asynchronously, through a loop per agent (loop.go). It sits above
// agent: the daemon attaches a Mirror to each agent it runs, and the
// agent starts, kicks and stops it through agent.Mirror.
package mirror

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

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/credentials"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// The primary stays the source of truth: nothing is fetched from the
// mirror. Its settings and records live beside the memory folder, out of
// the agent's reach: a mirror URL the agent could choose would let it copy
// the memory anywhere.
const (
	// mirrorFile holds the operator's per-agent mirror URL, or mirrorOff.
	mirrorFile = "mirror-url"
	mirrorOff  = "off"
	// mirrorLogFile (in records/) is the last DefaultLogKeep mirror
	// pushes, newest last, and the tip memfsd last put on the mirror.
	mirrorLogFile = "mirror-log.json"
)

// DefaultLogKeep bounds the mirror push log.
const DefaultLogKeep = 50

// States of a mirror, as status shows them.
const (
	StateSynced   = "synced"   // the mirror has the primary's last known tip
	StatePending  = "pending"  // the primary moved on; a push is due
	StatePushing  = "pushing"  // a push is under way
	StateRetrying = "retrying" // it failed for now; retried with backoff
	StateError    = "error"    // a person must act (next_step); retried at the next primary push
	StateIdle     = "idle"     // no daemon runs for this agent (memfsd mirror status from disk)
)

// mirrorRecord is what records/mirror-log.json holds.
type mirrorRecord struct {
	// URL and Tip: the tip memfsd last put on the mirror at URL (the
	// evidence that lets a replaced primary history replace the mirror's).
	URL string             `json:"url"`
	Tip string             `json:"tip"`
	Log []agent.MirrorPush `json:"log"`
}

// checkMirrorURL validates an operator's per-agent mirror URL as a
// per-agent remote is: http(s), a host, no credentials (they would be
// stored), query or fragment.
func checkMirrorURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("mirror url %q: want http(s)://host[:port]/path, no credentials or query (the mirror's token comes from MEMFSD_MIRROR_TOKEN or --mirror-token-file)", agent.RedactURL(raw))
	}
	return u.String(), nil
}

func mirrorPath(cfg *agent.Config, id string) string {
	return filepath.Join(cfg.Home, "agents", id, mirrorFile)
}

// mirrorURLOf is agent id's mirror: the operator's per-agent setting (or
// "off"), else --mirror-template's; "" when none.
func mirrorURLOf(cfg *agent.Config, id string) (u, source string) {
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
		return cfg.MirrorTemplateURL(id), "template"
	}
	return "", ""
}

// SetOnDisk records an operator's mirror URL for agent id (the
// daemon's admin route and, with no daemon, `memfsd mirror set`).
func SetOnDisk(cfg *agent.Config, id, raw string) error {
	if err := agent.ValidateID(id); err != nil {
		return err
	}
	u, err := checkMirrorURL(raw)
	if err != nil {
		return err
	}
	if same(u, agent.RemoteOf(cfg, id)) {
		return fmt.Errorf("mirror url %q is agent %s's primary remote: the mirror must be another repository", agent.RedactURL(u), id)
	}
	if err := cfg.EnsurePrivateDirs(id); err != nil {
		return err
	}
	return agent.WriteRecord(mirrorPath(cfg, id), []byte(u+"\n"))
}

// UnsetOnDisk turns agent id's mirror off (also one from
// --mirror-template). Set puts it back.
func UnsetOnDisk(cfg *agent.Config, id string) error {
	if err := agent.ValidateID(id); err != nil {
		return err
	}
	if err := cfg.EnsurePrivateDirs(id); err != nil {
		return err
	}
	return agent.WriteRecord(mirrorPath(cfg, id), []byte(mirrorOff+"\n"))
}

func same(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// remoteFor is the mirror at u with its credentials: the mirror's own
// token, else the primary's when the mirror is on the primary's host
// (scheme, host and port), else none — a token is never sent to a host it
// was not given for.
func remoteFor(a *agent.Agent, u string) gitmem.Remote {
	c := a.Config()
	m := gitmem.Remote{URL: u}
	user := c.MirrorUsername
	if user == "" {
		user = c.Username
	}
	switch {
	case c.MirrorCredentials() != nil: // its token file's token at each request
		m.Auth = &credentials.Auth{Creds: c.MirrorCredentials(), Bearer: c.AuthScheme == agent.AuthBearer, Username: user}
	case c.MirrorToken != "":
		m.Auth = c.AuthWith(user, c.MirrorToken)
	case c.HasToken() && sameHost(u, a.Remote().URL):
		m.Auth = c.AuthFor()
	}
	return m
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// readRecord reads records/mirror-log.json (empty when missing).
func readRecord(a *agent.Agent) mirrorRecord {
	var rec mirrorRecord
	data, err := os.ReadFile(a.RecordPath(mirrorLogFile))
	if err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	return rec
}

// appendLog adds an entry to the push log (the newest
// DefaultLogKeep stay) and, after a push, records the mirror's tip.
func appendLog(a *agent.Agent, u string, e agent.MirrorPush) {
	rec := readRecord(a)
	if e.Outcome != "failed" {
		rec.URL, rec.Tip = u, e.Tip
	}
	rec.Log = append(rec.Log, e)
	if n := len(rec.Log) - DefaultLogKeep; n > 0 {
		rec.Log = rec.Log[n:]
	}
	data, _ := json.MarshalIndent(rec, "", "  ")
	if err := agent.WriteRecord(a.RecordPath(mirrorLogFile), data); err != nil {
		a.Logger().Warn("mirror push log not written", "err", err)
	}
}

// ours is the tip memfsd last put on the mirror at u (zero when unknown).
func ours(a *agent.Agent, u string) plumbing.Hash {
	rec := readRecord(a)
	if rec.URL != u || rec.Tip == "" {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(rec.Tip)
}

// pushOnce is one mirror push of the primary's last known tip, with
// its log entry.
func pushOnce(ctx context.Context, a *agent.Agent, repo *gitmem.Repo, u string, force bool) (agent.MirrorPush, error) {
	start := time.Now()
	res, err := repo.PushMirror(ctx, remoteFor(a, u), gitmem.MirrorOptions{Ours: ours(a, u), Force: force})
	e := agent.MirrorPush{At: start.UTC(), Tip: agent.HashString(res.Tip), From: agent.HashString(res.From), Commits: res.Commits,
		Replaced: res.Replaced, TookMS: time.Since(start).Milliseconds()}
	switch {
	case err != nil:
		err = &mirrorError{err: retry.Wrap("mirror "+a.ID, err), agent: a.ID, home: a.Config().HomeArg()}
		e.Outcome, e.Class, e.Error, e.NextStep = "failed", string(retry.ClassOf(err)), mirrorMessage(err), retry.NextStep(err)
	case res.Tip.IsZero():
		return e, nil // the primary has no commit yet: nothing to log
	case res.From == res.Tip:
		e.Outcome = "up_to_date"
	default:
		e.Outcome = "pushed"
	}
	appendLog(a, u, e)
	return e, err
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

// ReadStatus is agent id's mirror from disk, with no daemon (nil
// when it has none).
func ReadStatus(cfg *agent.Config, id string) (*agent.MirrorStatus, error) {
	a, err := agent.New(cfg, id)
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
	st := diskStatus(a, repo, u, source)
	return &st, nil
}

// StatusPart adds the mirror's status from disk to an agent's status read
// by agent.ReadStatus, from the repository it opened (none when the agent
// has no mirror).
func StatusPart(a *agent.Agent, repo *gitmem.Repo, st *agent.Status) {
	if u, source := mirrorURLOf(a.Config(), a.ID); u != "" {
		m := diskStatus(a, repo, u, source)
		st.Mirror = &m
	}
}

// diskStatus is the mirror's status from the repository and the log.
func diskStatus(a *agent.Agent, repo *gitmem.Repo, u, source string) agent.MirrorStatus {
	st := agent.MirrorStatus{URL: agent.RedactURL(u), Source: source, State: StateIdle}
	rec := readRecord(a)
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
		st.LastError = &agent.LastError{Class: e.Class, Message: e.Error, At: e.At, Attempts: 1, NextStep: e.NextStep}
	}
	if pos, err := repo.MirrorPosition(); err == nil {
		st.PrimaryTip, st.LastPushedTip, st.Pending = agent.HashString(pos.Primary), agent.HashString(pos.Mirror), pos.Pending
	}
	return st
}

// PushOnDisk pushes agent id's mirror once, with no daemon.
func PushOnDisk(ctx context.Context, cfg *agent.Config, id string, force bool) (agent.MirrorPush, error) {
	a, err := agent.New(cfg, id)
	if err != nil {
		return agent.MirrorPush{}, err
	}
	u, _ := mirrorURLOf(cfg, id)
	if u == "" {
		return agent.MirrorPush{}, fmt.Errorf("mirror push %s: %w", id, ErrNoMirror)
	}
	repo, err := gitmem.Open(a.Dir(), a.Remote(), gitmem.Options{Logger: cfg.Logger})
	if err != nil {
		return agent.MirrorPush{}, fmt.Errorf("mirror push %s: %w", id, err)
	}
	defer repo.Close()
	return pushOnce(ctx, a, repo, u, force)
}
