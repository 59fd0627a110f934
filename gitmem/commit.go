package gitmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/indexfile"
	"github.com/memfsd/memfsd/worktree"
)

// ErrNothingToCommit is returned by CommitWrite when the paths already
// match HEAD.
var ErrNothingToCommit = errors.New("nothing to commit")

// CommitWrite commits exactly paths (created, changed or deleted in the work
// tree) as one commit on the branch: Commit with One set and no guard.
func (r *Repo) CommitWrite(paths []string, message string) (plumbing.Hash, error) {
	res, err := r.Commit(CommitRequest{Paths: paths, One: true, Message: func(PathView) string { return message }})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if len(res.Commits) == 0 {
		return res.Head, ErrNothingToCommit
	}
	return res.Head, nil
}

// PathView is one changed path of a commit as read under the repo's locks:
// Data is exactly what will be hashed if the path is committed.
type PathView struct {
	Path   string
	Kind   string            // ChangeCreate, ChangeUpdate or ChangeDelete
	Data   []byte            // the work tree's bytes (nil for a delete)
	Mode   filemode.FileMode // the work tree's mode: regular, executable or link (zero for a delete)
	InHead bool
	// TooLarge is the size of a file over the cap (Options.MaxFileBytes):
	// it was not read (Data is nil) and is always held, whatever the
	// guard says.
	TooLarge int64
	entry    object.TreeEntry
	objs     *gitstore.Objects
}

// Head reads HEAD's version of the path (nil when it is not in HEAD).
func (v PathView) Head() ([]byte, error) {
	if !v.InHead {
		return nil, nil
	}
	data, err := v.objs.Blob(v.entry.Hash)
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}

// HeadMode is HEAD's file mode of the path (zero when it is not in HEAD).
func (v PathView) HeadMode() filemode.FileMode {
	if !v.InHead {
		return 0
	}
	return v.entry.Mode
}

// Verdict is what a commit guard decides for one changed path.
type Verdict int

// Verdicts of a Guard.
const (
	Accept  Verdict = iota // commit the path as read
	Hold                   // leave it uncommitted, as it is
	Restore                // put HEAD's version back (remove the file when HEAD has none)
)

// Batch is what a Guard sees: every changed path of the request.
type Batch struct {
	Views []PathView
	r     *Repo
	head  plumbing.Hash
}

// Tracked counts the files in HEAD.
func (b *Batch) Tracked() (int, error) {
	if b.head.IsZero() {
		return 0, nil
	}
	if err := b.r.flattenCommit(b.head, map[string]object.TreeEntry{}); err != nil {
		return 0, err
	}
	return len(b.r.flat), nil
}

// Guard decides, while the repo's locks are held, what happens to each
// changed path: one verdict per view, in order.
type Guard func(b *Batch) ([]Verdict, error)

// CommitRequest is one step of the commit pipeline.
type CommitRequest struct {
	Paths []string
	// One makes a single commit of every accepted path (a memory-tool
	// command); otherwise each path is a commit of its own, in order.
	One bool
	// Message names a commit; with One it gets the first accepted view.
	Message func(PathView) string
	// Guard, when set, sees the changed paths before anything is written.
	Guard Guard
	// Keep stores bytes a Restore takes out of the work tree. It is called
	// before they leave it (and again for a newer write the exchange
	// displaced), so a rejected write is on record before it is undone.
	Keep func(path string, rejected []byte) error
	// Author, when set, authors and commits the commits instead of
	// Options.Author (a shared repository's writes carry their agent).
	Author *Signature
	// NoQuietWait returns a QuietError at once when the folder's git was
	// at work moments ago (Options.YieldToPerson), instead of waiting for
	// the quiet (up to quietTries times IndexQuiet): for writes the caller
	// holds and tries again itself (the watcher's).
	NoQuietWait bool
	// SkipStaged leaves alone, index and file, every path whose index
	// entry differs from HEAD: someone else staged it (a person's `git
	// add`, a revert waiting on its editor), and it is theirs to commit.
	SkipStaged bool
}

// Restored is a path a guard had put back to HEAD's version.
type Restored struct {
	Path string
	// Rejected is what the work tree held at the instant it was replaced
	// (nil when the file was already gone).
	Rejected []byte
}

// CommitResult says what Commit did.
type CommitResult struct {
	Head      plumbing.Hash   // the branch after the step
	Commits   []plumbing.Hash // commits made, oldest first
	Committed []string        // paths committed, in order
	Held      []string        // paths left uncommitted by the guard
	Restored  []Restored
	// Skipped are paths that are not memory paths (worktree.Check), left
	// out while the others were committed; without One only.
	Skipped []SkippedPath
	// Staged are paths left alone because someone else staged them
	// (SkipStaged).
	Staged []string
}

// Commit is the one commit pipeline: under the repo's mutex and git's
// index.lock it reads each path, shows the changed ones to the guard, puts
// back what the guard restores, and commits the rest — one commit per path,
// or one for all with One — moving the branch once, by compare-and-swap
// through <ref>.lock, before the new index is renamed into place. The
// checks and the commit see the same bytes: a write landing after the read
// is not in this commit and shows as modified afterwards. The cost follows
// the paths' depth and the index size, never the number of commits.
func (r *Repo) Commit(req CommitRequest) (CommitResult, error) {
	r.mu.Lock()
	defer r.unlock()
	res, err := r.commit(req, time.Now())
	var quiet *QuietError
	for i := 0; i < quietTries && !req.NoQuietWait && errors.As(err, &quiet); i++ {
		time.Sleep(quiet.Wait)
		res, err = r.commit(req, time.Now())
	}
	if err != nil {
		return res, fmt.Errorf("commit %s: %w", strings.Join(req.Paths, ", "), err)
	}
	return res, nil
}

// IndexQuiet is how long after another process last wrote the folder's
// index a commit waits before it takes index.lock: git commands come in
// runs (`git add`, then `git commit`, whose HEAD is read before its lock
// and moved after it), and git never waits for a lock. A var for tests.
var IndexQuiet = 250 * time.Millisecond

// QuietError is ErrPersonGitActive for a folder whose git was at work
// moments ago: quiet again after Wait, when the caller may try again.
type QuietError struct{ Wait time.Duration }

func (e *QuietError) Error() string {
	return fmt.Sprintf("%s: the folder's git was at work moments ago; quiet again in %s", ErrPersonGitActive, e.Wait.Round(time.Millisecond))
}

// Unwrap makes it ErrPersonGitActive.
func (e *QuietError) Unwrap() error { return ErrPersonGitActive }

// quietTries bounds how often a commit waits for the folder's git to be
// quiet (QuietError) before it returns the error.
const quietTries = 4

// commitTries bounds how often a commit is built again because the
// folder's branch or index changed under it (a person's git in between).
const commitTries = 8

// errRaced: the branch moved, or someone else changed the index entry of
// a path being committed, while the commit was built (outside index.lock):
// it is built again on what is there now.
var errRaced = errors.New("the branch or the index changed while the commit was built")

// ErrPersonGitActive: a git command in the folder rewrote the index with
// staged changes while a commit was built, so the commit was not made
// (its files stay as written): moving the branch then would make the
// person's commit, revert or merge fail. The caller holds the commit as
// for a person's git operation in progress, and tries again.
var ErrPersonGitActive = errors.New("a git command in the folder is staging or committing")

func (r *Repo) commit(req CommitRequest, when time.Time) (CommitResult, error) {
	var restored []Restored // put back by an earlier try: done, and reported
	for try := 1; ; try++ {
		res, err := r.commitOnce(req, when)
		res.Restored = append(restored, res.Restored...)
		if !errors.Is(err, errRaced) {
			return res, err
		}
		if try == commitTries {
			return res, fmt.Errorf("%w: %w %d times in a row (a git command running in a loop in the folder?); the files stay as written and are committed at the next try", ErrPersonGitActive, errRaced, try)
		}
		restored = res.Restored
	}
}

// commitOnce is one try of commit: everything is read, judged, hashed,
// written and hardened without the folder's index.lock; the lock is taken
// at the end, for the few system calls that move the branch and the index
// into place (indexWindow), so a person's git that starts meanwhile does
// not find it taken. errRaced when the branch or our paths' index entries
// changed in between.
func (r *Repo) commitOnce(req CommitRequest, when time.Time) (CommitResult, error) {
	var res CommitResult
	who := r.opts.Author
	if req.Author != nil {
		who = *req.Author
	}
	clean := make([]string, 0, len(req.Paths))
	for _, p := range req.Paths {
		c, err := worktree.Clean(p)
		if err != nil && !req.One {
			// One untrackable path (a .git below the root, ...) must not
			// stop the others: it is left out and reported, once per
			// folder (the first bad part), and silently for memfsd's own.
			var pe *worktree.PathError
			if errors.As(err, &pe) && !pe.Silent && !slices.ContainsFunc(res.Skipped, func(s SkippedPath) bool { return s.Path == pe.Prefix }) {
				_, why := worktree.Skip(pe.Prefix, r.isDir(pe.Prefix))
				res.Skipped = append(res.Skipped, SkippedPath{Path: pe.Prefix, Reason: why})
			}
			continue
		}
		if err != nil {
			return res, err
		}
		if !slices.Contains(clean, c) {
			clean = append(clean, c)
		}
	}
	if err := r.checkHead(); err != nil {
		return res, err
	}
	// The index is read first, with its stamp, then HEAD: if the index
	// is still the same under index.lock at the end, no git commit ran in
	// between (it rewrites the index), and the branch's compare-and-swap
	// catches any other move.
	ix, stamp, err := r.readIndexStamped()
	if err != nil {
		return res, err
	}
	parent, err := r.Head()
	if err != nil {
		return res, err
	}
	res.Head = parent
	var parentTree plumbing.Hash
	if !parent.IsZero() {
		if parentTree, err = r.objs.CommitTree(parent); err != nil {
			return res, err
		}
	}
	// What the index held for each path, to tell at the end whether
	// someone else changed those entries meanwhile.
	base := make(map[string]string, len(clean))
	for _, p := range clean {
		base[p] = entriesKey(ix, p)
	}

	// Read every path once: these bytes are what the guard judges and what
	// gets hashed.
	batch := &Batch{r: r, head: parent}
	states := map[string]*fileState{}
	touched := make(map[string]bool, len(clean))
	// Entries of memfsd's that a git command beside it undid (it read the
	// index before memfsd's last window and wrote it back after): HEAD's
	// entry again, without stat (git compares the content).
	for p, old := range r.clobbered {
		delete(r.clobbered, p)
		if entriesKey(ix, p) != old {
			continue // changed since: someone's
		}
		var e object.TreeEntry
		in := false
		if !parentTree.IsZero() {
			if e, in, err = r.objs.EntryAt(parentTree, p); err != nil {
				return res, err
			}
		}
		if in {
			ix.Set(p, e.Hash, e.Mode, nil)
		} else {
			ix.RemoveFile(p)
		}
		touched[p] = true
		if _, ok := base[p]; !ok {
			base[p] = old
		}
		r.log.Warn("a git command beside memfsd wrote back the index from before memfsd's commit; memfsd's entry put back", "path", p)
	}
	for _, p := range clean {
		f, err := r.readWorkFile(p)
		if err != nil {
			return res, err
		}
		var e object.TreeEntry
		inHead := false
		if !parentTree.IsZero() {
			if e, inHead, err = r.objs.EntryAt(parentTree, p); err != nil {
				return res, err
			}
		}
		if req.SkipStaged && stagedIn(ix, p, e, inHead) {
			res.Staged = append(res.Staged, p)
			continue
		}
		v := PathView{Path: p, InHead: inHead, entry: e, objs: r.objs}
		switch {
		case f == nil && !inHead:
			// Neither here nor in HEAD: nothing to record. Only p's own
			// entry goes: p may name a folder that was moved away, whose
			// files HEAD still has (removing them from the index read as
			// a person's staging, and held every commit for minutes).
			ix.RemoveFile(p)
			touched[p] = true
			continue
		case f == nil:
			v.Kind = ChangeDelete
		case f.tooLarge > 0:
			v.Kind, v.Mode, v.TooLarge = ChangeUpdate, f.mode, f.tooLarge
			if !inHead {
				v.Kind = ChangeCreate
			}
		case !inHead:
			v.Kind, v.Data, v.Mode = ChangeCreate, f.data, f.mode
		case blobHash(f.data) == e.Hash && f.mode == e.Mode:
			ix.Set(p, e.Hash, e.Mode, f.st) // unchanged: refresh the stat
			touched[p] = true
			continue
		default:
			v.Kind, v.Data, v.Mode = ChangeUpdate, f.data, f.mode
		}
		states[p] = f
		batch.Views = append(batch.Views, v)
	}
	verdicts := make([]Verdict, len(batch.Views))
	if req.Guard != nil && len(batch.Views) > 0 {
		if verdicts, err = req.Guard(batch); err != nil {
			return res, err
		}
		if len(verdicts) != len(batch.Views) {
			return res, fmt.Errorf("guard gave %d verdicts for %d paths", len(verdicts), len(batch.Views))
		}
	}

	tip, tipTree := parent, parentTree
	var lastMessage string
	var group []gitstore.Change
	var first *PathView
	for i, v := range batch.Views {
		if v.TooLarge > 0 {
			verdicts[i] = Hold // never read, so never committed nor undone
		}
		switch verdicts[i] {
		case Hold:
			res.Held = append(res.Held, v.Path)
			continue
		case Restore:
			rs, st, err := r.restoreHeadVersion(v, req.Keep)
			if err != nil {
				return res, err
			}
			if v.InHead {
				ix.Set(v.Path, v.entry.Hash, v.entry.Mode, st)
			} else {
				ix.Remove(v.Path)
			}
			touched[v.Path] = true
			res.Restored = append(res.Restored, rs)
			continue
		}
		c := gitstore.Change{Path: v.Path}
		if f := states[v.Path]; f != nil {
			if c.Hash, err = r.objs.Write(plumbing.BlobObject, f.data); err != nil {
				return res, err
			}
			c.Mode = f.mode
			ix.Set(v.Path, c.Hash, c.Mode, f.st)
		} else {
			ix.Remove(v.Path)
		}
		touched[v.Path] = true
		res.Committed = append(res.Committed, v.Path)
		if req.One {
			group = append(group, c)
			if first == nil {
				first = &batch.Views[i]
			}
			continue
		}
		lastMessage = req.Message(v)
		if tip, tipTree, err = r.commitChangesAs(who, tip, tipTree, []gitstore.Change{c}, lastMessage, when, &res); err != nil {
			return res, err
		}
	}
	if req.One && len(group) > 0 {
		lastMessage = req.Message(*first)
		if tip, _, err = r.commitChangesAs(who, tip, tipTree, group, lastMessage, when, &res); err != nil {
			return res, err
		}
	}
	// The ref's new value and the index are written into spare files,
	// then one syncfs hardens them with the new objects, and only then,
	// in one short window under index.lock, do they move into place: a
	// ref never points at an object a power cut can lose, for one flush
	// per commit, and the folder's index.lock is held for microseconds.
	var ref *gitstore.PendingRef
	if tip != parent && r.opts.YieldToPerson && r.look != nil && (r.look.stamp != stamp || r.look.head != parent) {
		// The index changed since the caller looked for a person's git:
		// staging that began since means their commit may be under way.
		staged, err := r.newStaged(ix, parent, base)
		if err != nil {
			return res, err
		}
		if len(staged) > 0 {
			return res, fmt.Errorf("%w (staged since the look: %s)", ErrPersonGitActive, strings.Join(staged, ", "))
		}
	}
	if tip != parent {
		ref, err = gitstore.PrepareRefLater(r.GitDir, r.branchRef(), parent, tip, r.spares, r.reflog(reflogCommitMsg(parent, tip, len(res.Commits), lastMessage)))
		if err != nil {
			return res, err
		}
		defer ref.Drop()
	}
	ix.SmudgeRacy(touched)
	if ref == nil && !ix.Dirty {
		return res, nil // nothing new, every stat recorded as it is: no write
	}
	ixData, err := r.ixf.Encode(ix)
	if err != nil {
		return res, err
	}
	pending, err := gitstore.PrepareLock(filepath.Join(r.GitDir, "index"), ixData, r.spares)
	if err != nil {
		return res, err
	}
	defer pending.Drop()
	if err := r.objs.Flush(ref != nil); err != nil {
		return res, err
	}
	moved, err := r.indexWindow(pending, ref, stamp, parent, ix, ixData, touched, base)
	if moved {
		res.Head = tip
	}
	return res, err
}

// indexWindow is a commit's only hold of the folder's index.lock, kept to
// a few system calls: the branch's lock is taken first (and its value
// checked: errRaced when it moved), then the prepared index is linked into
// place as index.lock, its stamp checked, the branch and the index renamed
// in, and the lock is gone; the reflog is written after. When someone
// else rewrote the index since it was read (a `git status` refreshing it,
// a `git add` of other paths), the commit's entries are carried over to
// theirs first, outside the lock (carryOver). A lock held by someone else
// is waited on, never held across (git never waits; memfsd does): with the
// branch's lock taken and index.lock busy, the branch's lock is given back
// while waiting. moved: the branch was moved.
func (r *Repo) indexWindow(pending *gitstore.PendingLock, ref *gitstore.PendingRef, stamp indexfile.Stamp, parent plumbing.Hash, ix *index.Index, ixData []byte, touched map[string]bool, base map[string]string) (bool, error) {
	deadline := time.Now().Add(r.opts.LockWait)
	delay := 100 * time.Microsecond
	busy := filepath.Join(r.GitDir, "index.lock")
	for {
		if time.Now().After(deadline) {
			if _, err := os.Lstat(busy); err == nil {
				return false, fmt.Errorf("take %s: %w", busy, gitstore.LockedError(busy, r.opts.LockWait, r.spares))
			}
			return false, fmt.Errorf("%w: the index kept changing for %s", ErrPersonGitActive, r.opts.LockWait)
		}
		if !r.ixf.Same(stamp) {
			var err error
			if ix, ixData, stamp, err = r.carryOver(ix, parent, ref != nil, touched, base); err != nil {
				return false, err
			}
			if err := pending.Replace(ixData); err != nil {
				return false, err
			}
			continue // its stamp again: it may have changed once more
		}
		if wait := r.notQuiet(stamp); wait > 0 {
			// The caller holds the commit as for a person's operation
			// in progress, and tries again (a memory-tool call is
			// answered at once, its commit lands after).
			return false, &QuietError{Wait: wait}
		}
		var upd *gitstore.RefUpdate
		if ref != nil {
			var err error
			if upd, err = ref.TryAcquire(); errors.Is(err, gitstore.ErrRefMoved) {
				return false, errRaced
			} else if err != nil {
				return false, err
			} else if upd == nil {
				busy = ref.LockPath()
			}
		}
		if ref == nil || upd != nil {
			start := time.Now()
			lk, err := pending.TryAcquire()
			if err != nil {
				ref.Return(upd)
				return false, err
			}
			if lk != nil {
				moved, done, err := r.swapIn(lk, upd, stamp)
				r.noteIndexLock(time.Since(start))
				if !done {
					pending.Return(lk)
					ref.Return(upd)
					continue // the index changed just before the lock: carried over first
				}
				lk.Finish()
				if moved {
					upd.Log()
					r.markOwn()
				}
				if err == nil {
					r.ixf.Written(ix, ixData)
					r.noteWindow(ix, touched, base)
				} else if !moved {
					return false, err
				}
				return moved, nil // a stale index is rebuilt by the next write
			}
			ref.Return(upd)
			busy = filepath.Join(r.GitDir, "index.lock")
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("take %s: %w", busy, gitstore.LockedError(busy, r.opts.LockWait, r.spares))
		}
		time.Sleep(delay)
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}

// notQuiet reports how much longer to wait because another process was at work in the folder's
// git moments ago — wrote the index stamped cur, moved a branch (a ref
// renamed into refs/heads), moved HEAD (logs/HEAD appended), added a
// worktree — so a person's git is running, or about to run its next
// command (`git add`, then `git commit`; a commit in a worktree, then
// `git merge`, which reads HEAD well before it takes index.lock): until
// IndexQuiet has passed since (0: quiet).
func (r *Repo) notQuiet(cur indexfile.Stamp) time.Duration {
	if !r.opts.YieldToPerson {
		return 0
	}
	var last time.Time
	if !cur.Missing && !r.ixf.Ours(cur) {
		last = time.Unix(0, cur.Ctime)
	}
	for i, rel := range quietMarks {
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(r.GitDir, rel), &st) != nil {
			continue
		}
		t := time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
		if t.UnixNano() != r.ownMarks[i].Load() && t.After(last) {
			last = t
		}
	}
	age := time.Since(last)
	if last.IsZero() || age < 0 || age >= IndexQuiet {
		return 0
	}
	return IndexQuiet - age
}

// quietMarks are the names in .git whose change tells a git command was
// at work (notQuiet); memfsd's own changes to them are remembered
// (markOwn) and not counted.
var quietMarks = [...]string{"refs/heads", "logs/HEAD", "worktrees"}

// adoptMarks takes the marks and the index as they are for memfsd's own
// (at open: a clone just wrote them).
func (r *Repo) adoptMarks() {
	r.markOwn()
	if st, err := r.ixf.Stamp(); err == nil {
		r.ixf.Adopt(st)
	}
}

// markOwn remembers the marks as memfsd's own window left them.
func (r *Repo) markOwn() {
	if !r.opts.YieldToPerson {
		return
	}
	for i, rel := range quietMarks {
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(r.GitDir, rel), &st) == nil {
			r.ownMarks[i].Store(time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UnixNano())
		}
	}
}

// maxQuietWait bounds waitQuiet: a pull holds the agent's writes meanwhile.
const maxQuietWait = time.Second

// waitQuiet waits, for at most the lock wait (and maxQuietWait), until no other process has
// written the index for IndexQuiet and none holds index.lock, before an
// operation that must hold index.lock for longer than a commit's window
// (a pull replacing files): ErrPersonGitActive when that never came.
func (r *Repo) waitQuiet() error {
	if !r.opts.YieldToPerson {
		return nil
	}
	deadline := time.Now().Add(min(r.opts.LockWait, maxQuietWait))
	for time.Now().Before(deadline) {
		cur, err := r.ixf.Stamp()
		if err != nil {
			return err
		}
		if wait := r.notQuiet(cur); wait > 0 {
			time.Sleep(min(wait, time.Until(deadline)))
			continue
		}
		if _, err := os.Lstat(filepath.Join(r.GitDir, "index.lock")); err == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		return nil
	}
	return fmt.Errorf("%w: the index was never quiet for %s", ErrPersonGitActive, r.opts.LockWait)
}

// swapIn is the window under index.lock (lk): the index must still be
// the one the commit was prepared on (done false otherwise: nothing
// moved, the lock is the caller's to give back), then the branch (upd,
// if any) and the index are renamed in. An index that could not be
// renamed in after the branch moved is logged: the next write rebuilds
// those entries.
func (r *Repo) swapIn(lk *gitstore.LockFile, upd *gitstore.RefUpdate, stamp indexfile.Stamp) (moved, done bool, err error) {
	if !r.ixf.Same(stamp) {
		return false, false, nil
	}
	if upd != nil {
		if err := upd.Move(); err != nil {
			lk.Rollback()
			return false, true, err
		}
		moved = true
	}
	if err := lk.Rename(); err != nil {
		r.log.Warn("commit landed but the index was not updated", "err", err)
		return moved, true, err
	}
	return moved, true, nil
}

// carryOver brings a commit's index entries (touched, as set in ix) over
// to the index someone else wrote since it was read: errRaced when they
// changed the entries of the commit's own paths (base: as read), and, when
// the commit moves the branch, ErrPersonGitActive when their index holds
// staged changes. It returns the new index, its encoding and the stamp of
// the index it was built on.
func (r *Repo) carryOver(ix *index.Index, parent plumbing.Hash, moves bool, touched map[string]bool, base map[string]string) (*index.Index, []byte, indexfile.Stamp, error) {
	fresh, stamp, err := r.readIndexStamped()
	if err != nil {
		return nil, nil, stamp, err
	}
	for p, k := range base {
		if entriesKey(fresh, p) != k {
			return nil, nil, stamp, errRaced // theirs now: judged again
		}
	}
	// Someone's git wrote the index while the commit was built, and it
	// holds staged changes: an operation is under way (a plain `git
	// commit` releases index.lock before it moves HEAD, and fails if HEAD
	// moves meanwhile). The branch is left alone.
	if moves && r.opts.YieldToPerson {
		staged, err := r.newStaged(fresh, parent, base)
		if err != nil {
			return nil, nil, stamp, err
		}
		if len(staged) > 0 {
			return nil, nil, stamp, fmt.Errorf("%w (staged: %s)", ErrPersonGitActive, strings.Join(staged, ", "))
		}
	}
	for p := range touched {
		fresh.Take(ix, p)
	}
	fresh.SmudgeRacy(touched)
	data, err := r.ixf.Encode(fresh)
	return fresh, data, stamp, err
}

// othersStaged lists the paths, other than ours, whose entry in ix
// differs from head's tree.
func (r *Repo) othersStaged(ix *index.Index, head plumbing.Hash, ours map[string]string) ([]string, error) {
	var tracked map[string]object.TreeEntry
	if !head.IsZero() {
		if err := r.flattenCommit(head, nil); err != nil {
			return nil, err
		}
		tracked = r.flat
	}
	var out []string
	for _, p := range stagedAgainst(ix, tracked) {
		if _, mine := ours[p]; !mine {
			out = append(out, p)
		}
	}
	return out, nil
}

// entriesKey is what the index records for p that a commit depends on:
// each stage's object and mode (not the stat data a refresh rewrites).
func entriesKey(ix *index.Index, p string) string {
	var b strings.Builder
	for _, e := range ix.EntriesOf(p) {
		info := e.Info()
		fmt.Fprintf(&b, "%d:%s:%o;", e.Stage, info.Hash, info.Mode)
	}
	return b.String()
}

// commitChanges writes the trees and a commit of changes on top of tip. A
// change that leaves the tree as it was makes no commit.
func (r *Repo) commitChanges(tip, tipTree plumbing.Hash, changes []gitstore.Change, message string, when time.Time, res *CommitResult) (plumbing.Hash, plumbing.Hash, error) {
	return r.commitChangesAs(r.opts.Author, tip, tipTree, changes, message, when, res)
}

// commitChangesAs is commitChanges by who.
func (r *Repo) commitChangesAs(who Signature, tip, tipTree plumbing.Hash, changes []gitstore.Change, message string, when time.Time, res *CommitResult) (plumbing.Hash, plumbing.Hash, error) {
	tree, err := r.objs.ApplyChanges(tipTree, changes)
	if err != nil {
		return tip, tipTree, err
	}
	if tree == tipTree && !tip.IsZero() {
		return tip, tipTree, nil
	}
	var parents []plumbing.Hash
	if !tip.IsZero() {
		parents = append(parents, tip)
	}
	sig := object.Signature{Name: who.Name, Email: who.Email, When: when}
	commit, err := r.objs.Write(plumbing.CommitObject, codec.EncodeCommit(tree, parents, sig, sig, message))
	if err != nil {
		return tip, tipTree, err
	}
	r.objs.RememberCommit(commit, tree)
	res.Commits = append(res.Commits, commit)
	return commit, tree, nil
}

// restoreHeadVersion puts HEAD's version of v back in one step (or removes
// the file when HEAD has none) and returns what it displaced: the agent's
// bytes exactly as they stood at that instant, a write made after the read
// included.
func (r *Repo) restoreHeadVersion(v PathView, keep func(string, []byte) error) (Restored, *syscall.Stat_t, error) {
	rs := Restored{Path: v.Path}
	if keep == nil {
		keep = func(string, []byte) error { return nil }
	}
	if v.Data != nil {
		if err := keep(v.Path, v.Data); err != nil {
			return rs, nil, err
		}
	}
	var got worktree.Displaced
	var st *syscall.Stat_t
	var err error
	if v.InHead {
		var data []byte
		if data, err = v.Head(); err != nil {
			return rs, nil, err
		}
		got, st, err = r.files.Put(v.Path, data, wtMode(v.entry.Mode))
	} else {
		got, err = r.files.Take(v.Path)
	}
	if err != nil {
		return rs, nil, err
	}
	if got.Existed && !got.Is(v.entry.Hash, wtMode(v.entry.Mode)) {
		rs.Rejected = got.Data
		if !bytes.Equal(got.Data, v.Data) {
			// A write that landed after the read: kept as well.
			if err := keep(v.Path, got.Data); err != nil {
				return rs, st, err
			}
		}
	}
	return rs, st, nil
}

// reflogCommitMsg is git's reflog message for commits: "commit: <subject>"
// ("commit (initial)" for the first), with the count when one step made
// several.
func reflogCommitMsg(parent, tip plumbing.Hash, n int, message string) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(message), "\n")
	kind := "commit"
	if parent.IsZero() {
		kind = "commit (initial)"
	}
	if n > 1 {
		return fmt.Sprintf("%s: %s (and %d more)", kind, subject, n-1)
	}
	return kind + ": " + subject
}

// reflog is a reflog entry by this repo's author.
func (r *Repo) reflog(msg string) *gitstore.ReflogEntry {
	who := r.opts.Author
	if who.Name == "" {
		who = Signature{Name: "memfsd", Email: "memfsd@memfsd.local"}
	}
	return &gitstore.ReflogEntry{Name: who.Name, Email: who.Email, Msg: msg}
}
