package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// Agent is one agent's memory folder and its remote.
type Agent struct {
	ID   string
	Repo *gitmem.Repo
	cfg  *Config
	log  *slog.Logger
}

// SyncResult says what a sync did.
type SyncResult struct {
	Pulled    bool // fast-forwarded to commits from elsewhere
	Committed int  // commits made from uncommitted files
	Pushed    int  // commits sent to the remote
	Head      plumbing.Hash
	Replayed  int      // local commits rebuilt on the remote tip
	Conflicts []string // conflict copies made (recovery)
	Backup    string   // backup ref made before a restore
	Held      []string // deletions held by the mass-delete guard
	Attempts  int      // sync attempts (retries + 1)
	LastClass retry.Class
}

// Open clones the agent's remote into its memory folder on first use (an
// empty remote gets the default blocks as its first commit) or opens the
// folder that is there. It does not pull: Sync does.
func Open(ctx context.Context, cfg *Config, id string) (*Agent, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	if err := cfg.ensurePrivateDirs(id); err != nil {
		return nil, fmt.Errorf("open %s: %w", id, err)
	}
	log := cfg.Logger.With("agent", id)
	opts := gitmem.Options{Author: cfg.author(id), NoSync: cfg.NoFsync, LockWait: cfg.LockWait, Logger: log}
	repo, err := gitmem.Clone(ctx, cfg.MemoryDir(id), cfg.remote(id), opts)
	if err != nil {
		return nil, retry.Wrap("clone "+id, err)
	}
	a := &Agent{ID: id, Repo: repo, cfg: cfg, log: log}
	if err := a.initialiseIfEmpty(ctx); err != nil {
		repo.Close()
		return nil, err
	}
	return a, nil
}

// initialiseIfEmpty gives an unborn branch the default blocks and pushes it.
func (a *Agent) initialiseIfEmpty(ctx context.Context) error {
	head, err := a.Repo.Head()
	if err != nil || !head.IsZero() {
		return err
	}
	defaults := blocks.Defaults()
	paths := make([]string, 0, len(defaults))
	for p, content := range defaults {
		abs := filepath.Join(a.Repo.Dir, filepath.FromSlash(p))
		if _, err := os.Lstat(abs); err == nil {
			paths = append(paths, p) // keep what is there
			continue
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return fmt.Errorf("initialise %s: %w", a.ID, err)
		}
		if err := os.WriteFile(abs, []byte(content), 0o600); err != nil {
			return fmt.Errorf("initialise %s: %w", a.ID, err)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if _, err := a.Repo.CommitWrite(paths, "memfsd: initialise memory with default blocks"); err != nil {
		return fmt.Errorf("initialise %s: %w", a.ID, err)
	}
	a.log.Info("initialised empty remote with default blocks")
	if _, err := a.Repo.Push(ctx); err != nil {
		return retry.Wrap("push "+a.ID, err)
	}
	return nil
}

// Close stops the agent's background work.
func (a *Agent) Close() error { return a.Repo.Close() }

// DirectWriteMessage is the commit message of a file written straight into
// the work tree.
func DirectWriteMessage(d gitmem.DirtyPath) string {
	return "memory: " + d.Kind + " " + d.Path
}

// SyncOptions adjust a sync.
type SyncOptions struct {
	// AcceptDeletes commits a mass deletion instead of holding it.
	AcceptDeletes bool
	// SkipScan skips looking for uncommitted files (the daemon's watcher
	// already committed them): only reconcile and push.
	SkipScan bool
}

// ErrMassDeleteHeld is returned when a sync found more than half of the
// tracked files (at least MassDeleteMin) or the whole folder gone and did
// not commit those deletions.
var ErrMassDeleteHeld = errors.New("mass delete held")

// MassDeleteMin is the fewest tracked files for the half rule to apply.
const MassDeleteMin = 20

// IsMassDelete reports whether deleting deleted of tracked files (with
// remaining files left in the folder) must be held for a person to confirm.
func IsMassDelete(deleted, tracked, remaining int) bool {
	if deleted == 0 {
		return false
	}
	if remaining == 0 && deleted == tracked {
		return true // the whole folder vanished
	}
	return tracked >= MassDeleteMin && deleted*2 > tracked
}

// Sync commits every uncommitted file (one commit each), then reconciles
// with the remote and pushes: fast-forward, replay with three-way merge, or
// restore after a history replacement (gitmem.Reconcile), with retryable
// failures retried under the backoff policy. A mass deletion is held (not
// committed) unless opts.AcceptDeletes; the rest still syncs and the error
// is ErrMassDeleteHeld. Other errors are *retry.Error naming the operation.
func (a *Agent) Sync(ctx context.Context, opts SyncOptions) (SyncResult, error) {
	var res SyncResult
	var held error
	if !opts.SkipScan {
		n, heldPaths, err := a.commitUncommitted(opts.AcceptDeletes)
		res.Committed, res.Held = n, heldPaths
		if err != nil {
			return res, retry.Wrap("commit "+a.ID, err)
		}
		if len(heldPaths) > 0 {
			held = fmt.Errorf("sync %s: %w: %d files deleted at once (run memfsd sync --agent %s --accept-deletes to commit the deletions, or restore the files)",
				a.ID, ErrMassDeleteHeld, len(heldPaths), a.ID)
		}
	}
	var rr gitmem.ReconcileResult
	out, err := retry.Do(ctx, a.cfg.Retry, "sync "+a.ID, func() error {
		var err error
		rr, err = a.Repo.Reconcile(ctx)
		return err
	})
	res.Attempts, res.LastClass = out.Attempts, out.LastClass
	res.Pulled, res.Pushed, res.Head = rr.Pulled, rr.Pushed, rr.Head
	res.Replayed, res.Conflicts, res.Backup = rr.Replayed, rr.Conflicts, rr.Backup
	if err != nil {
		return res, err
	}
	if err := a.initialiseIfEmpty(ctx); err != nil {
		return res, err
	}
	return res, held
}

// commitUncommitted commits each dirty path, holding a mass deletion.
func (a *Agent) commitUncommitted(acceptDeletes bool) (int, []string, error) {
	dirty, err := a.Repo.DirtyPaths()
	if err != nil {
		return 0, nil, err
	}
	var deletes []string
	for _, d := range dirty {
		if d.Kind == gitmem.ChangeDelete {
			deletes = append(deletes, d.Path)
		}
	}
	hold := false
	if len(deletes) > 0 && !acceptDeletes {
		tracked, err := a.Repo.TrackedFiles()
		if err != nil {
			return 0, nil, err
		}
		hold = IsMassDelete(len(deletes), len(tracked), len(tracked)-len(deletes)+countCreates(dirty))
	}
	n := 0
	for _, d := range dirty {
		if hold && d.Kind == gitmem.ChangeDelete {
			continue
		}
		if undone, err := a.GuardDirectWrite(d.Path); err != nil {
			return n, nil, err
		} else if undone {
			continue
		}
		_, err := a.Repo.CommitWrite([]string{d.Path}, DirectWriteMessage(d))
		if errors.Is(err, gitmem.ErrNothingToCommit) {
			continue
		}
		if err != nil {
			return n, nil, err
		}
		n++
	}
	if hold {
		return n, deletes, nil
	}
	return n, nil, nil
}

func countCreates(dirty []gitmem.DirtyPath) int {
	n := 0
	for _, d := range dirty {
		if d.Kind == gitmem.ChangeCreate {
			n++
		}
	}
	return n
}
