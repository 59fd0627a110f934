package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/blockset"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memcontext"
	"github.com/memfsd/memfsd/memsearch"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/persongit"
	"github.com/memfsd/memfsd/retry"
	"github.com/memfsd/memfsd/treecheck"
	"github.com/memfsd/memfsd/worktree"
	"github.com/memfsd/memfsd/writeproblem"
)

// Defaults of an agent's settings.
const (
	DefaultDebounce = 150 * time.Millisecond
	// maxDelay bounds how long a burst of writes can postpone its commits.
	maxDelay = 2 * time.Second
	// deleteSettle is the quiet a burst with deletions gets before its
	// commit (within maxDelay): one rm of many files, paused by a loaded
	// machine for more than the debounce, is judged by the mass-delete
	// guard as one deletion, not as two halves each under the bar.
	deleteSettle = 750 * time.Millisecond
	// DefaultCloneRetry is how often a never-cloned agent tries again.
	DefaultCloneRetry = 30 * time.Second
)

// Hooks tell the process (metrics) what an agent did; nil fields are
// ignored. They are called from the agent's goroutines and must not block.
type Hooks struct {
	Committed func(n int)
	Pulled    func()
	Failed    func(class retry.Class)
	Turned    func(outcome string, took time.Duration)
	// Mirrored: a mirror push ended (pushed, up_to_date or failed, with
	// the failure's class).
	Mirrored func(outcome string, class retry.Class)
}

// Agent owns one agent: its repository, its pending writes, the commit
// pipeline, the sync loop and its state. New starts nothing; Open opens the
// work tree and, with Background, starts the agent's two goroutines (the
// commit loop and the sync loop); Close stops them, commits what is pending
// and pushes once, bounded by its context.
type Agent struct {
	// treeChecks is letta-code's tree checks, kept from commit to commit.
	treeChecks treecheck.Checks
	// heldMu serialises the constraints-held record's read-modify-write
	// (the pipeline and the outgoing check both update it).
	heldMu sync.Mutex

	ID string

	// Settings, read at Open.
	Background   bool          // run the commit and sync loops (the daemon)
	Debounce     time.Duration // quiet time before a direct write is committed
	PullInterval time.Duration // fetch between turns; 0 = off
	// StartSlots, when set, bounds agents doing their start-up network
	// sync at once (shared by the daemon's agents).
	StartSlots chan struct{}
	// ScanSlots, when set, bounds full rescans running at once.
	ScanSlots chan struct{}
	// OnReady is called once the work tree is usable (opened or cloned):
	// the daemon starts watching it then, before the start-up sync.
	OnReady func()
	Hooks   Hooks
	// Mirror, when set, is the agent's mirror (package mirror; mirror.go).
	Mirror Mirror
	// SharedRender, when set, is the agent's shared repositories as its
	// context shows them after its own memory (the daemon's).
	SharedRender func() string

	cfg *Config
	log *slog.Logger
	// folder is the unit's own folder: <home>/agents/<id> for an agent,
	// <home>/shared/<name> for a shared repository (shared.go); the work
	// tree is memory/ below it, memfsd's records beside it.
	folder string
	// shared is set on a shared repository's unit.
	shared bool
	// remoteOverride is the operator's per-agent remote URL, read by New.
	remoteOverride string
	// remoteURL is the agent's remote as Open settled it (remoterecord.go):
	// the recorded one, else the configuration's.
	remoteURL string
	// views are the attached agents' views of a shared unit (package
	// shared; nil for an agent).
	views Views

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// writeMu serialises the pipeline's commits with memory-tool calls,
	// operator block changes and the syncs' steps that rewrite work files
	// (gitmem.Options.WorkLock; local steps only, never the network).
	writeMu sync.Mutex
	// beforeToolWrite, when set (tests only), runs in a memory-tool call
	// after it read the files and before it writes them.
	beforeToolWrite func()
	// blocks are the operator's block-set approvals (blockset).
	blockSets blockset.Book
	// skipMu serialises updates of the skipped-paths record.
	skipMu sync.Mutex
	// callMu serialises idempotent memory calls (look up, run, record).
	callMu sync.Mutex
	// ctxCache renders the context, once per revision (memcontext).
	ctxCache memcontext.Cache
	// search is the tiers and search index, built on first use (search.go).
	search memsearch.State

	// tree is the memory folder held open (worktree.go), with repo.
	tree atomic.Pointer[worktree.Dir]

	// answers is the last answer about the agent, given when its
	// repository does not answer in time (isolate.go).
	answers answerCache

	// problems are direct writes not committed (a full disk, too large, a
	// bad name), as the last commit pass saw them.
	problems writeproblem.Set

	mu        sync.Mutex
	repo      *gitmem.Repo // nil until opened or cloned
	pending   map[string]bool
	firstSeen time.Time
	lastSeen  time.Time // the burst's latest event
	lastErr   *LastError
	lastPush  time.Time
	lastSync  time.Time
	// retryAt and retryTries are the sync loop's background retry of a
	// failed push (loop.go): when it runs next, how many ran since the
	// last success (0: none due).
	retryAt    time.Time
	retryTries int
	polling    bool
	// repackC wakes the repack loop (which runs only with Background).
	repackC chan struct{}

	flushTimer *time.Timer
	rescanC    chan struct{}
	// pg is the wait on a person's git operation in the folder (persongit.go).
	pg persongit.Wait

	// Turn coalescing: a turn waits for the first sync that starts after
	// it arrived; turns arriving during a sync share the next one.
	kick     chan struct{}
	started  int
	finished int
	last     TurnResult
	done     *sync.Cond
}

// New makes the agent id over cfg (validated). It starts nothing.
func New(cfg *Config, id string) (*Agent, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Agent{
		ID:       id,
		Debounce: DefaultDebounce,
		cfg:      cfg,
		log:      cfg.Logger.With("agent", id),
		folder:   filepath.Join(cfg.Home, "agents", id),
		pending:  map[string]bool{},
		rescanC:  make(chan struct{}, 1),
		kick:     make(chan struct{}, 1),
		repackC:  make(chan struct{}, 1),
	}
	a.blockSets.WriteFile = writeRecord
	a.done = sync.NewCond(&a.mu)
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.remoteOverride = readRemoteOverride(cfg, id)
	a.search.Disk = searchDisk{a}
	return a, nil
}

// Open makes the agent's folders private and opens its work tree. Without
// Background it clones on first use (an empty remote gets the default
// blocks) and returns; nothing runs behind the caller's back. With
// Background an existing work tree is opened at once (ready, OnReady
// called: watched before any network step) and the loops start: the sync
// loop clones a never-cloned agent, then runs the start-up sync.
func (a *Agent) Open(ctx context.Context) error {
	if err := a.ensureFolder(); err != nil {
		return fmt.Errorf("open %s: %w", a.ID, err)
	}
	if err := a.resolveRemote(); err != nil {
		return err
	}
	if !a.Background {
		return a.ensureRepo(ctx)
	}
	if a.Debounce <= 0 {
		a.Debounce = DefaultDebounce
	}
	a.flushTimer = time.NewTimer(time.Hour)
	a.flushTimer.Stop()
	if a.shared {
		a.moveDetachedClone()
	}
	if repo, err := gitmem.Open(a.Dir(), a.remote(), a.repoOptions()); err == nil {
		a.setRepo(repo)
	} else if !errors.Is(err, gitmem.ErrNotRepository) {
		a.recordErr(retry.Wrap("open "+a.ID, err), 1)
		a.log.Error("open failed; retried by the sync loop", "err", err)
	}
	a.wg.Add(3)
	go a.commitLoop()
	go a.syncLoop()
	go a.repackLoop()
	a.startMirror()
	if a.shared {
		a.wg.Add(1)
		go a.viewLoop()
	}
	return nil
}

// Close stops the loops and waits for them, commits what is pending and
// pushes once within ctx (cancel it to abort the push: commits stay local
// for the next start).
//
// Close returns by ctx's end whatever the agent's repository does: loops
// stuck in it (a read that never returns) are left behind, logged, and
// the final push is skipped (the commits stay local for the next start).
func (a *Agent) Close(ctx context.Context) error {
	a.cancel()
	stopped := make(chan struct{})
	go func() { a.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		a.log.Error("the agent's loops did not stop in time (its repository does not answer); left behind", "err", ctx.Err())
		return fmt.Errorf("close %s: %w", a.ID, ctx.Err())
	}
	a.stopMirror() // the mirror catches up at the next start (never delays shutdown)
	a.closeViews()
	a.dropSearch()
	a.cfg.SearchPool.Forget(a)
	if a.flushTimer != nil {
		a.flushTimer.Stop()
	}
	repo := a.repository()
	if repo == nil {
		return nil
	}
	var err error
	if a.Background {
		a.flush()
		// The final sync scans the folder: a write whose watch event had
		// not reached the commit loop when the loops stopped (a write just
		// before the signal) is committed and pushed too.
		if _, serr := a.Sync(ctx, SyncOptions{}); errors.Is(serr, ErrPersonGitInProgress) {
			a.log.Info("final sync skipped: a person's git operation is in progress in the folder; writes are committed at the next start", "err", serr)
		} else if serr != nil && !errors.Is(serr, ErrMassDeleteHeld) {
			a.log.Warn("final push failed; commits stay local for the next start", "class", string(retry.ClassOf(serr)), "err", serr)
			err = serr
		}
	}
	a.mu.Lock()
	a.repo = nil
	a.mu.Unlock()
	a.closeTree()
	repo.Close()
	return err
}

// Dir is the agent's memory folder (the work tree).
func (a *Agent) Dir() string { return filepath.Join(a.folder, "memory") }

// Ready reports whether the work tree is usable (opened or cloned).
func (a *Agent) Ready() bool { return a.repository() != nil }

func (a *Agent) repository() *gitmem.Repo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.repo
}

func (a *Agent) setRepo(repo *gitmem.Repo) {
	a.openTree()
	a.mu.Lock()
	a.repo = repo
	a.mu.Unlock()
	if a.OnReady != nil {
		a.OnReady()
	}
	a.kickViews()
}

func (a *Agent) repoOptions() gitmem.Options {
	return gitmem.Options{Author: a.cfg.Author(a.ID), Operator: a.cfg.Operator(), NoSync: a.cfg.NoFsync, LockWait: a.cfg.LockWait, Logger: a.log, MaxFileBytes: a.maxFileBytes(),
		Outgoing: a.outgoingGuard, Incoming: a.incomingGuard, Keep: a.keepRejected, CreateIfMissing: a.cfg.CreateRemote,
		Secret: a.secretIn, WorkLock: &a.writeMu, YieldToPerson: true}
}

// ensureRepo opens or clones the work tree (the network only for a first
// clone); an empty remote gets the default blocks, committed before the
// work tree counts as usable and pushed after.
func (a *Agent) ensureRepo(ctx context.Context) error {
	if a.repository() != nil {
		return nil
	}
	var repo *gitmem.Repo
	err := a.withFreshToken(func() (err error) {
		repo, err = gitmem.Clone(ctx, a.Dir(), a.remote(), a.repoOptions())
		return err
	})
	if err != nil {
		return retry.Wrap("clone "+a.ID, err)
	}
	// The remote it was cloned from is the agent's from now on.
	if err := a.recordRemote(a.remote().URL); err != nil {
		repo.Close()
		return err
	}
	initialised, err := a.initialiseIfEmpty(repo)
	if err != nil {
		repo.Close()
		return err
	}
	a.setRepo(repo)
	if initialised {
		if err := a.withFreshToken(func() error { _, err := repo.Push(ctx); return err }); err != nil {
			return retry.Wrap("push "+a.ID, err)
		}
	}
	return nil
}

// initialiseIfEmpty gives an unborn branch the default blocks (the push
// follows); true when it did.
func (a *Agent) initialiseIfEmpty(repo *gitmem.Repo) (bool, error) {
	head, err := repo.Head()
	if err != nil || !head.IsZero() || a.shared {
		// A shared repository starts empty: its first write is its first
		// commit (persona and human are each agent's own).
		return false, err
	}
	defaults := blocks.Defaults()
	paths := make([]string, 0, len(defaults))
	err = a.withTree(func(wt *worktree.Dir) error {
		for p, content := range defaults {
			paths = append(paths, p)
			// Only where nothing stands: what is there is kept.
			if _, _, err := wt.Create(p, []byte(content), worktree.Regular); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("initialise %s: %w", a.ID, err)
	}
	slices.Sort(paths)
	err = a.underWrite(func() error {
		_, err := repo.CommitWrite(paths, "memfsd: initialise memory with default blocks")
		return err
	})
	if err != nil {
		return false, fmt.Errorf("initialise %s: %w", a.ID, err)
	}
	a.log.Info("initialised empty remote with default blocks")
	return true, nil
}

// underWrite runs f under writeMu, which goes even when f panics: a
// panic that safely recovers must not block the agent's later writes.
func (a *Agent) underWrite(f func() error) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	return f()
}

func (a *Agent) recordErr(err error, attempts int) {
	class := retry.ClassOf(err)
	if a.Hooks.Failed != nil {
		a.Hooks.Failed(class)
	}
	a.mu.Lock()
	a.lastErr = &LastError{Class: string(class), Message: err.Error(), At: time.Now().UTC(), Attempts: attempts, NextStep: retry.NextStep(err)}
	a.mu.Unlock()
}

func (a *Agent) clearErr() {
	a.mu.Lock()
	a.lastErr = nil
	a.mu.Unlock()
}

// remoteFile, outside the memory folder, holds an operator's per-agent
// remote URL (PUT /v1/agents/{id} with {"remote_url": ...}).
const remoteFile = "remote-url"

// remote is the agent's remote: the operator's per-agent URL when one is
// recorded, else the configuration's (template, base URL or embedded).
func (a *Agent) remote() gitmem.Remote {
	r := a.cfg.Remote(a.ID)
	u := a.remoteURL
	if u == "" {
		u = a.RemoteOverride()
	}
	if u == "" && !a.shared {
		// Not opened (Open settles it): the agent's recorded remote.
		u = RecordedRemote(a.cfg, a.ID)
	}
	if u != "" && u != r.URL {
		r.URL = u
		if r.Auth == nil && a.cfg.HasToken() && !isEmbedded(u) {
			r.Auth = a.cfg.AuthFor()
		}
	}
	return r
}

// RemoteOverride is the per-agent remote URL the operator set ("" when
// none), read once by New: a new one takes a restart.
func (a *Agent) RemoteOverride() string { return a.remoteOverride }

func readRemoteOverride(cfg *Config, id string) string {
	data, err := os.ReadFile(filepath.Join(cfg.Home, "agents", id, remoteFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// SetRemoteOverride records an operator's per-agent remote URL (validated
// as a base URL is: http(s), a host, no query; credentials refused).
func SetRemoteOverride(cfg *Config, id, raw string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("remote_url %q: want http(s)://host[:port]/path, no credentials or query (the token comes from MEMFSD_TOKEN)", RedactURL(raw))
	}
	if err := cfg.EnsurePrivateDirs(id); err != nil {
		return err
	}
	return writeRecord(filepath.Join(cfg.Home, "agents", id, remoteFile), []byte(u.String()+"\n"))
}

// secretIn is the secret guard for pushes (nil patterns: off).
func (a *Agent) secretIn(data []byte) (string, bool) {
	return memtool.SecretIn(a.secretPatterns(), string(data))
}
