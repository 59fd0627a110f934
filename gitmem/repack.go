package gitmem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitstore"
)

// DefaultRepackLoose is how many loose objects make a repack worth it.
const DefaultRepackLoose = 512

// ErrPacksChanged: a git command beside the repack (a person's `git
// repack -a -d`, which does not take gc.pid) moved objects it was reading;
// nothing was removed, and the next repack starts from what is there.
var ErrPacksChanged = errors.New("the packs changed under the repack (a git repack beside it); skipped")

// RepackResult says what Repack did.
type RepackResult struct {
	Packed int      // loose objects moved into the new pack
	Merged []string // older packs rolled into it
	Pack   string   // the new pack's name (empty when none was made)
}

// Repack keeps the object folder small and fast over a long life, as `git
// repack -d --geometric=2` does: the loose objects (when there are at
// least minLoose) and every pack that is not at least twice the size of
// all smaller ones together go into one new pack, with deltas (go-git's
// encoder, git's window of 10), so a thousand commits of a changing tree
// cost what git gc would leave, not a full tree each. Pack sizes then form
// a geometric series: O(log n) packs, and each object is rewritten
// O(log n) times over its life.
//
// Nothing is ever dropped: every object of the rolled-up packs and every
// loose object goes into the new pack, reachable or not (pruning is the
// person's `git gc`). It never holds the write lock while it reads and
// packs (loose objects and packs never change once written); only the
// re-read of the pack list and the removal of what the new pack now holds
// take it, briefly. It honours git's gc.pid both ways: a running `git gc`
// makes it skip (ErrGCRunning), and while it runs a person's `git gc`
// waits. A crash at any point leaves every object loose, packed, or both:
// the pack and its index are synced and renamed into place (pack first,
// index last) before anything goes.
func (r *Repo) Repack(ctx context.Context, minLoose int) (RepackResult, error) {
	var res RepackResult
	ctx, done, err := r.bg.Start(ctx) // Close cancels it and waits
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	defer done()
	select { // one repack at a time in this process: it is CPU and disk work
	case repackSlot <- struct{}{}:
		defer func() { <-repackSlot }()
	case <-ctx.Done():
		return res, ctx.Err()
	}
	began := time.Now()
	release, err := r.takeGCPID()
	if err != nil {
		return res, err
	}
	defer release()
	r.objs.LooseSince.Store(0)
	r.objs.WritePacks.Store(0)
	objDir := filepath.Join(r.GitDir, "objects")
	loose, err := gitstore.ListLoose(objDir)
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	if len(loose) < max(minLoose, 1) {
		loose = nil
	}
	packs, err := gitstore.ListPacks(r.GitDir)
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	merge := gitstore.GeometricRollUp(packs, len(loose))
	if len(loose) == 0 && len(merge) < 2 {
		return res, nil // nothing loose enough, and no packs out of series
	}
	objects := slices.Clone(loose)
	for _, p := range merge {
		objects = append(objects, p.Objects...)
	}
	slices.SortFunc(objects, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	objects = slices.Compact(objects)
	name, err := gitstore.WriteDeltaPack(ctx, r.bg, r.GitDir, objDir, objects, r.objs.Sync)
	if gitstore.StalePacks(err) || errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("repack: %w: %v", ErrPacksChanged, err)
	}
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	// Only now, and only what the new pack holds (WriteDeltaPack checked
	// every object is in its index), goes. Under mu, briefly: memfsd's
	// storage learns the new pack list, and the rolled-up packs go (a
	// lookup must never find a pack listed but gone).
	r.underLock(func() {
		for _, p := range merge {
			if p.Name == name {
				continue // the same objects packed the same way: it is the new pack
			}
			base := filepath.Join(objDir, "pack", p.Name)
			// The index first: without it git and go-git no longer see the pack.
			for _, ext := range []string{".idx", ".pack", ".rev", ".bitmap"} {
				_ = os.Remove(base + ext)
			}
			res.Merged = append(res.Merged, p.Name)
		}
		r.objs.RereadPacks()
		r.objs.PacksRolledUp(res.Merged, name)
	})
	// The loose copies go without the lock (hundreds of unlinks would
	// stall writes): a reader that misses one finds it in the new pack,
	// which every reader already sees. The pack is checked to be there
	// still before each batch (a person's `git repack -a -d` may have
	// rolled it up meanwhile, without our loose copies' objects).
	newIdx := filepath.Join(objDir, "pack", name+".idx")
	for i, h := range loose {
		if i%64 == 0 {
			if _, err := os.Stat(newIdx); err != nil {
				r.log.Warn("the new pack went away during the repack; loose objects kept", "pack", name)
				break
			}
		}
		if err := os.Remove(r.objs.LoosePath(h)); err == nil {
			res.Packed++
		}
	}
	res.Pack = name
	r.log.Info("repacked", "loose", res.Packed, "packs_merged", len(res.Merged), "objects", len(objects), "pack", name, "took", time.Since(began).Round(time.Millisecond))
	return res, nil
}

// RepackDue reports whether enough objects (DefaultRepackLoose) or packs
// of writes (writePacksDue) were written since the repo was opened or last
// repacked to make a Repack worth it. Cheap: for a commit path to ask
// after every commit.
func (r *Repo) RepackDue() bool {
	return r.objs.LooseSince.Load() >= DefaultRepackLoose || r.objs.WritePacks.Load() >= gitstore.WritePacksDue
}

// repackSlot lets one repack run at a time in the process.
var repackSlot = make(chan struct{}, 1)

// takeGCPID takes .git/gc.pid as git gc does (see gitstore.TakeGCPID).
func (r *Repo) takeGCPID() (func(), error) { return gitstore.TakeGCPID(r.GitDir) }

// ErrClosed: the repository was closed; nothing more runs on it.
var ErrClosed = gitstore.ErrClosed
