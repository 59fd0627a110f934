package gitmem

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitstore"
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
	if err != nil {
		return res, fmt.Errorf("commit %s: %w", strings.Join(req.Paths, ", "), err)
	}
	return res, nil
}

func (r *Repo) commit(req CommitRequest, when time.Time) (CommitResult, error) {
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
	lk, err := gitstore.AcquireLock(filepath.Join(r.GitDir, "index"), r.opts.LockWait, r.spares)
	if err != nil {
		return res, err
	}
	defer lk.Rollback()

	// Read HEAD only under index.lock: a git commit running beside us holds
	// it too, so HEAD cannot move between here and our compare-and-swap
	// unless someone ignores the lock (the CAS then catches it).
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
	ix, err := r.readIndex()
	if err != nil {
		return res, err
	}

	// Read every path once: these bytes are what the guard judges and what
	// gets hashed.
	batch := &Batch{r: r, head: parent}
	states := map[string]*fileState{}
	touched := make(map[string]bool, len(clean))
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
	// The ref's new value and the index are written under their locks,
	// then one syncfs hardens them with the new objects, and only then do
	// they move into place: a ref never points at an object a power cut
	// can lose, for one flush per commit.
	var ref *gitstore.RefUpdate
	if tip != parent {
		ref, err = gitstore.PrepareRef(r.GitDir, r.branchRef(), parent, tip, r.opts.LockWait, r.spares, r.reflog(reflogCommitMsg(parent, tip, len(res.Commits), lastMessage)))
		if err != nil {
			return res, err
		}
		defer ref.Rollback()
	}
	ix.SmudgeRacy(touched)
	if ref == nil && !ix.Dirty {
		return res, nil // nothing new, every stat recorded as it is: no write
	}
	ixData, err := r.ixf.Encode(ix)
	if err != nil {
		return res, err
	}
	if err := lk.Write(ixData, false); err != nil {
		return res, err
	}
	if err := r.objs.Flush(ref != nil); err != nil {
		return res, err
	}
	if ref != nil {
		if err := ref.Commit(false); err != nil {
			return res, err
		}
		res.Head = tip
	}
	if err := lk.Commit(); err != nil {
		// The commit is in; only the index is stale (git status shows the
		// change as staged-back). The next write rebuilds those entries.
		r.log.Warn("commit landed but the index was not updated", "commit", tip.String(), "err", err)
	} else {
		r.ixf.Written(ix, ixData)
	}
	return res, nil
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
