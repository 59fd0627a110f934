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

// Sync commits every uncommitted file (one commit each), then reconciles
// with the remote and pushes: fast-forward, replay with three-way merge, or
// restore after a history replacement (gitmem.Reconcile), with retryable
// failures retried under the backoff policy. Errors are *retry.Error with
// the failing operation.
func (a *Agent) Sync(ctx context.Context) (SyncResult, error) {
	var res SyncResult
	made, err := a.Repo.CommitPending(DirectWriteMessage)
	res.Committed = len(made)
	if err != nil {
		return res, retry.Wrap("commit "+a.ID, err)
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
	return res, nil
}

// IsBadInput reports whether err is the caller's mistake (bad id or path).
func IsBadInput(err error) bool {
	return errors.Is(err, ErrBadID) || errors.Is(err, gitmem.ErrBadPath)
}
