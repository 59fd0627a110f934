package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// AcceptOptions is an operator's decision about held deletions: exactly one
// of Deletes (commit them) and Restore (put the files back).
type AcceptOptions struct {
	Deletes bool `json:"deletes"`
	Restore bool `json:"restore"`
}

// AcceptResult says what Accept did.
type AcceptResult struct {
	Committed []string `json:"committed"` // held deletions committed
	Restored  []string `json:"restored"`  // held files put back
	// RemoteUpdate is the held remote tip the decision was recorded for:
	// the next sync applies it (deletes) or re-adds its deletions on top
	// and pushes them (restore).
	RemoteUpdate string `json:"remote_update,omitempty"`
	// HeldPush is the local tip whose held push the decision was for.
	HeldPush string `json:"held_push,omitempty"`
}

// ErrNothingHeld is returned by Accept when nothing is held.
var ErrNothingHeld = errors.New("nothing is held")

// Accept settles held deletions the operator's way (SPEC §8): with
// Deletes they are committed (the push follows at the next sync), with
// Restore the files are written back from HEAD. Only the operator's routes
// call it: the admin socket, or `memfsd sync --accept-deletes /
// --restore-deletes` on the machine.
func (a *Agent) Accept(ctx context.Context, opts AcceptOptions) (AcceptResult, error) {
	var res AcceptResult
	if opts.Deletes == opts.Restore {
		return res, errors.New("accept: want exactly one of deletes and restore")
	}
	repo := a.repository()
	if repo == nil {
		// Only the sync loop (or Open, for one command) clones.
		return res, fmt.Errorf("accept %s: %w", a.ID, ErrNotReady)
	}
	held := a.heldDeletes(repo)
	remote, push := a.readHeldRemote(), a.readHeldPush()
	if len(held) == 0 && remote.Remote == "" && push.Remote == "" {
		return res, fmt.Errorf("accept %s: %w", a.ID, ErrNothingHeld)
	}
	if push.Remote != "" {
		// A committed deletion whose push is held: decided for that tip.
		key := approvePushAccept
		if opts.Restore {
			key = approvePushRestore
		}
		if err := a.approve(key, decisionKey(push.Remote, push.Paths)); err != nil {
			return res, fmt.Errorf("accept %s: %w", a.ID, err)
		}
		res.HeldPush = push.Remote
		a.log.Info("held push decided by the operator", "tip", push.Remote, "restore", opts.Restore)
	}
	if remote.Remote != "" {
		key := approveRemoteAccept
		if opts.Restore {
			key = approveRemoteRestore
		}
		if err := a.approve(key, decisionKey(remote.Remote, remote.Paths)); err != nil {
			return res, fmt.Errorf("accept %s: %w", a.ID, err)
		}
		res.RemoteUpdate = remote.Remote
		a.log.Info("held remote update decided by the operator", "remote", remote.Remote, "restore", opts.Restore)
	}
	if len(held) == 0 {
		return res, nil
	}
	if opts.Restore {
		var restored []string
		err := a.underWrite(func() (err error) {
			if repo = a.repository(); repo == nil { // a rebuild of the .git swaps it under writeMu
				return ErrNotReady
			}
			restored, err = repo.RestoreMissing(held)
			return err
		})
		res.Restored = restored
		if err != nil {
			return res, fmt.Errorf("accept %s: restore: %w", a.ID, err)
		}
		a.log.Info("held deletions restored by the operator", "files", len(restored))
		return res, a.writeHeld(nil)
	}
	out, err := a.commitDirect(held, true, true)
	if err != nil {
		return res, fmt.Errorf("accept %s: %w", a.ID, err)
	}
	if out.Committed > 0 && a.Hooks.Committed != nil {
		a.Hooks.Committed(out.Committed)
	}
	res.Committed = held
	// The operator took these deletions: their push is not held again (if
	// the range to push deletes more than these, it is, and asks again).
	if err := a.approve(approvePushAccept, decisionKey(a.localTip(), out.Deleted)); err != nil {
		return res, fmt.Errorf("accept %s: %w", a.ID, err)
	}
	a.log.Info("held deletions accepted by the operator", "files", len(held))
	return res, nil
}

// decisionKey binds an operator's decision to one tip and the exact set of
// files it deletes: the same tip with other deletions is another decision.
func decisionKey(tip string, paths []string) string {
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\x00")))
	return tip + ":" + hex.EncodeToString(sum[:8])
}
