package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/retry"
)

// The memory's .git rebuilt when objects its refs or index name are gone
// (issue 27): objects/ put back from an older copy, a pack or a loose-object
// folder removed by the agent's shell. Without it every commit and sync of
// the agent fails for good. The rebuild is what a careful person does by
// hand: confirm the damage (gitmem.ConfirmDamage: a miss while objects
// move is not damage), clone the remote afresh beside the folder, move the
// damaged .git aside (kept, outside the memory folder), put the clone's
// .git in its place, and commit the work tree's files on top. Nothing in
// the work tree is lost; a file deleted only in unpushed local history
// comes back from the remote.

// rebuiltFile, in records/, lists the rebuilds of the agent's .git.
const rebuiltFile = "git-rebuilt.json"

// rebuiltKeep bounds the rebuilds the record lists.
const rebuiltKeep = 10

// healToolWait bounds the rebuild a memory-tool call waits for.
const healToolWait = 2 * time.Minute

// A failed rebuild is tried again at the next sync, but no sooner than
// healWaitMin after it (doubling up to healWaitMax): a remote that is down
// is not cloned from at every commit's retry.
const (
	healWaitMin = 5 * time.Second
	healWaitMax = 2 * time.Minute
)

// asidePrefix names the damaged .git kept in the agent's folder.
const asidePrefix = "broken-git-"

// GitRebuild is one rebuild of the memory's .git, as status shows it.
type GitRebuild struct {
	At time.Time `json:"at"`
	// Aside is where the damaged .git was kept (never removed by memfsd).
	Aside string `json:"aside"`
	// Missing says what was missing (the first objects, and what named them).
	Missing  string `json:"missing"`
	Class    string `json:"class"`
	NextStep string `json:"next_step"`
}

// RebuildError is a confirmed damage whose rebuild failed (the remote
// down, a full disk): the next sync tries again.
type RebuildError struct {
	Damage *gitmem.DamageError
	Err    error
}

func (e *RebuildError) Error() string {
	return fmt.Sprintf("%v; rebuild from the remote: %v", e.Damage, e.Err)
}

func (e *RebuildError) Unwrap() []error { return []error{e.Damage, e.Err} }

// damageHint is a commit that failed on a missing object, for the next
// sync to look at (the commit paths hold writeMu and never reach the
// network: the rebuild runs in the sync).
type damageHint struct {
	repo *gitmem.Repo
	err  error
}

// noteMissing remembers a commit that failed on a missing object and asks
// for a sync, which confirms the damage and rebuilds.
func (a *Agent) noteMissing(repo *gitmem.Repo, err error) {
	if !gitmem.MissingObject(err) {
		return
	}
	a.damage.Store(&damageHint{repo: repo, err: err})
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// heal looks at a repository whose read failed on a missing object (cause)
// and rebuilds its .git when objects are really missing. again says the
// failed step is worth one more try: the .git was rebuilt (here or by a
// concurrent heal), or every object is there after all (a stale view).
func (a *Agent) heal(ctx context.Context, failed *gitmem.Repo, cause error) (again bool, err error) {
	if !gitmem.MissingObject(cause) || failed == nil {
		return false, nil
	}
	a.healMu.Lock()
	defer a.healMu.Unlock()
	repo := a.repository()
	if repo == nil {
		return false, nil
	}
	if repo != failed {
		return true, nil // rebuilt meanwhile
	}
	if a.healErr != nil && time.Now().Before(a.healNext) {
		return false, a.healErr // the last rebuild failed a moment ago
	}
	dmg, err := repo.ConfirmDamage(ctx)
	if err != nil {
		a.log.Info("an object was not found, and the repository cannot be checked now; looked at again at the next sync", "cause", cause, "err", err)
		return false, nil
	}
	if dmg == nil {
		a.log.Info("an object was not found, but every object the repository names is there (moved by a repack or a git gc); nothing rebuilt", "cause", cause)
		return true, nil
	}
	a.log.Warn("objects missing from the memory's .git; rebuilding it from the remote (the old .git is kept)", "missing", dmg.Error(), "cause", cause)
	var rb *gitmem.Rebuild
	err = a.withFreshToken(func() (err error) {
		rb, err = gitmem.PrepareRebuild(ctx, a.Dir(), a.remote(), a.repoOptions())
		return err
	})
	if err != nil {
		return false, a.rebuildFailed(&RebuildError{Damage: dmg, Err: retry.Wrap("rebuild "+a.ID, err)})
	}
	aside := a.asidePath(time.Now())
	a.writeMu.Lock()
	nr, err := rb.Swap(repo, aside)
	if nr == nil {
		// The old repository is closed: open what is there now (the old
		// .git put back, or whatever the agent's shell left); nil when
		// nothing opens, and the sync loop tries again.
		nr, _ = gitmem.Open(a.Dir(), a.remote(), a.repoOptions())
	}
	a.mu.Lock()
	a.repo = nr
	a.mu.Unlock()
	a.writeMu.Unlock()
	if err != nil {
		return false, a.rebuildFailed(&RebuildError{Damage: dmg, Err: err})
	}
	a.healErr, a.healWait = nil, 0
	rec := GitRebuild{At: time.Now().UTC(), Aside: aside, Missing: dmg.Error(), Class: "objects_missing",
		NextStep: "none needed: the work tree's files were committed on top of a fresh clone and pushed; a file deleted only in unpushed local history may have come back (delete it again); the old .git is kept at " + aside + " for inspection (remove it when done)"}
	if err := a.recordRebuild(rec); err != nil {
		a.log.Warn("recording the rebuild failed", "err", err)
	}
	a.log.Warn("rebuilt the memory's .git from the remote: objects were missing; the work tree's files are committed on top, the old .git is kept",
		"missing", dmg.Error(), "aside", aside)
	a.kickViews()
	// Files the lost history held and the fresh clone lacks are in the
	// work tree, uncommitted: looked for, committed and pushed.
	a.Rescan()
	select {
	case a.kick <- struct{}{}:
	default:
	}
	return true, nil
}

// rebuildFailed records a failed rebuild, for status and for the wait
// before the next (under healMu).
func (a *Agent) rebuildFailed(err *RebuildError) error {
	a.healWait = min(max(2*a.healWait, healWaitMin), healWaitMax)
	a.healNext = time.Now().Add(a.healWait)
	a.healErr = err
	a.recordErr(err, 1)
	a.log.Warn("rebuilding the memory's .git failed; tried again at the next sync", "class", string(retry.ClassOf(err)), "not_before", a.healNext.UTC().Format(time.RFC3339), "err", err)
	return err
}

// asidePath is where a damaged .git is kept: in the agent's folder, beside
// the memory folder (the agent does not see it), named by the UTC time.
func (a *Agent) asidePath(now time.Time) string {
	base := filepath.Join(a.folder, asidePrefix+now.UTC().Format("20060102T150405Z"))
	p := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			return p
		}
		p = fmt.Sprintf("%s-%d", base, i)
	}
}

// recordRebuild adds rec to the rebuilds record (newest last).
func (a *Agent) recordRebuild(rec GitRebuild) error {
	list := append(a.readRebuilds(), rec)
	if len(list) > rebuiltKeep {
		list = list[len(list)-rebuiltKeep:]
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	return writeRecord(a.recordPath(rebuiltFile), data)
}

// readRebuilds is the rebuilds record (nil when none).
func (a *Agent) readRebuilds() []GitRebuild {
	data, err := os.ReadFile(a.recordPath(rebuiltFile))
	if err != nil {
		return nil
	}
	var list []GitRebuild
	if json.Unmarshal(data, &list) != nil {
		return nil
	}
	return list
}

// syncHealing is one sync; when it (or a commit since the last sync)
// failed on a missing object and the .git is rebuilt, it syncs once more,
// committing the work tree's files on top of the fresh clone.
func (a *Agent) syncHealing(ctx context.Context, opts SyncOptions) (SyncResult, error) {
	if d := a.damage.Swap(nil); d != nil {
		again, herr := a.heal(ctx, d.repo, d.err)
		if herr != nil {
			// The .git is broken and could not be rebuilt: a sync
			// would only fail on it again.
			return SyncResult{}, herr
		}
		if again {
			opts.SkipScan = false
		}
	}
	repo := a.repository()
	res, err := a.syncOnce(ctx, opts)
	if !gitmem.MissingObject(err) {
		return res, err
	}
	again, herr := a.heal(ctx, repo, err)
	if herr != nil {
		return res, herr
	}
	if !again {
		return res, err
	}
	opts.SkipScan = false
	return a.syncOnce(ctx, opts)
}

// runHealing runs one memory-tool call. A commit that failed on a missing
// object leaves the call undone (not final); once the .git is rebuilt the
// call runs once more, on the new repository.
func (a *Agent) runHealing(in memtool.Call, trailer string) (memtool.Result, error) {
	var missed error
	var failed *gitmem.Repo
	tool, err := a.memoryToolAs(trailer, nil, func(repo *gitmem.Repo, err error) { failed, missed = repo, err })
	if err != nil {
		return memtool.Result{}, err
	}
	res := tool.RunCall(in)
	if missed == nil || res.Final() {
		return res, nil
	}
	ctx, cancel := context.WithTimeout(a.ctx, healToolWait)
	defer cancel()
	if again, _ := a.heal(ctx, failed, missed); !again {
		return res, nil
	}
	if tool, err = a.memoryToolAs(trailer, nil, nil); err != nil {
		return res, nil
	}
	return tool.RunCall(in), nil
}
