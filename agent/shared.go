package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitmem"
)

// A shared repository is served by one unit per home (package shared's
// Unit), built on an Agent made by NewShared: its folder is
// <home>/shared/<name> (the one clone in memory/ below it, memfsd's
// records beside it) and its remote is the repository's. Every attached
// agent's write goes through that core's one commit pipeline (its
// repository's locks and writeMu), its sync loop pushes and recovers like
// any agent's, and the same guards (read-only blocks, secrets, deletion
// holds, front matter) judge every write, with the writing agent as the
// commit's author. The unit's views of the repository (its attached
// agents' folders) are package shared's; the core reaches them through
// Views.

// Views is a shared repository's views as the core of its unit sees them
// (package shared's Unit): Open calls MoveAside before it opens the
// repository and runs Run in a goroutine Close waits for (until ctx
// ends); each sync kicks them (Kick); Close calls CloseViews once the
// loops ended.
type Views interface {
	MoveAside()
	Run(ctx context.Context)
	Kick()
	CloseViews()
	// PushProposals pushes the proposals not pushed yet (each sync).
	PushProposals(ctx context.Context)
}

// NewShared makes the core of shared repository name's unit at remoteURL
// over cfg (validated), serving views (package shared's New validates the
// name and makes the unit). It starts nothing.
func NewShared(cfg *Config, name, remoteURL string, views Views) (*Agent, error) {
	a, err := New(cfg, name)
	if err != nil {
		return nil, err
	}
	a.folder = cfg.SharedDir(name)
	a.shared = true
	a.treeChecks.Shared = true
	a.views = views
	a.remoteOverride = remoteURL
	a.log = cfg.Logger.With("shared", name)
	return a, nil
}

// Shared reports whether a is a shared repository's unit.
func (a *Agent) Shared() bool { return a.shared }

// ensureFolder creates the unit's folders 0700 whatever the umask (and
// tightens them when they exist).
func (a *Agent) ensureFolder() error {
	if !a.shared {
		return a.cfg.EnsurePrivateDirs(a.ID)
	}
	for _, d := range []string{a.cfg.Home, filepath.Join(a.cfg.Home, "shared"), a.folder} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// moveDetachedClone: the views move a clone found off its branch aside.
func (a *Agent) moveDetachedClone() {
	if a.views != nil {
		a.views.MoveAside()
	}
}

// viewLoop runs the views' loop until the agent closes.
func (a *Agent) viewLoop() {
	defer a.wg.Done()
	if a.views != nil {
		a.views.Run(a.ctx)
	}
}

// kickViews asks the views for a round (the tip moved).
func (a *Agent) kickViews() {
	if a.views != nil {
		a.views.Kick()
	}
}

// pushPendingProposals pushes the unit's proposals not pushed yet.
func (a *Agent) pushPendingProposals(ctx context.Context) {
	if a.views != nil {
		a.views.PushProposals(ctx)
	}
}

// closeViews lets every view's folder go (Close, after the loops ended).
func (a *Agent) closeViews() {
	if a.views != nil {
		a.views.CloseViews()
	}
}

// ProposalBase is the commit a proposal goes on top of: the shared
// branch's remote tip, or, before the shared repository's first push
// reached the remote (no remote tip yet), the local tip the first push will
// carry. A root commit there would be history an operator's plain `git
// merge` refuses (unrelated histories). Zero only when both are unborn.
func ProposalBase(repo *gitmem.Repo) (plumbing.Hash, error) {
	base, err := repo.RemoteHead()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read the remote tip: %w", err)
	}
	if base.IsZero() {
		if base, err = repo.Head(); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read the local tip: %w", err)
		}
	}
	return base, nil
}
