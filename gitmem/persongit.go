package gitmem

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/indexfile"
)

// A person's git in the folder. `git commit` reads HEAD when it starts and
// moves it by compare-and-swap when its editor closes; `git revert`,
// `cherry-pick`, `merge` and `rebase` do the same through it. Any commit of
// memfsd's in between makes the person's fail ("cannot lock ref 'HEAD': is
// at X but expected Y"), whatever files either touches. git holds no lock
// across the editor (plain `git commit` not even index.lock), but it leaves
// signs in .git, which PersonGit reads.

// personGitFiles are the files and folders git keeps while an operation
// waits on a person (editor open, conflict to resolve, a rebase stopped).
var personGitFiles = []string{
	"REVERT_HEAD", "CHERRY_PICK_HEAD", "MERGE_HEAD",
	"rebase-merge", "rebase-apply", "sequencer",
	"index.lock",
}

// PersonGitSigns is what a person's git operation in progress left in the
// folder's .git.
type PersonGitSigns struct {
	// Signs name what was seen: "REVERT_HEAD", "COMMIT_EDITMSG" (written
	// after the branch last moved), "index.lock", "staged" (index entries
	// that differ from HEAD: memfsd's index always matches HEAD).
	Signs []string
	// Staged are the paths whose index entry differs from HEAD (a file
	// added, changed or removed in the index, or in conflict): the
	// person's, never memfsd's to commit.
	Staged []string
	// Stale are sign files older than the maxAge given: left behind, not
	// in progress (reported, not waited on).
	Stale []string
	// Key tells one set of signs from another (names, ages, staged
	// entries): a wait that ran out is not started again for the same key.
	Key string
}

// Any reports whether an operation looks in progress.
func (s PersonGitSigns) Any() bool { return len(s.Signs) > 0 }

// PersonGit reads the signs of a person's git operation in the folder.
// Sign files are only lstat'ed (never opened: a FIFO there does not block
// the read); one older than maxAge counts as left behind. The index and
// HEAD are read through the repo's readers (caps, regular files only).
func (r *Repo) PersonGit(now time.Time, maxAge time.Duration) (PersonGitSigns, error) {
	r.mu.Lock()
	defer r.unlock()
	var s PersonGitSigns
	var key strings.Builder
	for _, name := range personGitFiles {
		fi, err := gitstore.StatGitFile(r.GitDir, name)
		if err != nil {
			continue // absent (or unreadable: not a sign we can date)
		}
		if name == "index.lock" && memfsdLock(fi) {
			// Taken by a memfsd (this process or another on the same
			// home: a one-shot sync beside the daemon): its locks are
			// hard links of its spare files, git's have one name.
			continue
		}
		if maxAge > 0 && now.Sub(fi.ModTime()) > maxAge {
			s.Stale = append(s.Stale, name)
			continue
		}
		s.Signs = append(s.Signs, name)
		fmt.Fprintf(&key, "%s@%d;", name, fi.ModTime().UnixNano())
	}
	// COMMIT_EDITMSG stays after every commit; written after the branch
	// last moved, a commit is waiting on its editor (or was abandoned).
	if fi, err := gitstore.StatGitFile(r.GitDir, "COMMIT_EDITMSG"); err == nil && fi.Mode().IsRegular() {
		msg := fi.ModTime()
		if msg.After(r.branchMoved()) {
			if maxAge > 0 && now.Sub(msg) > maxAge {
				s.Stale = append(s.Stale, "COMMIT_EDITMSG")
			} else {
				s.Signs = append(s.Signs, "COMMIT_EDITMSG")
				fmt.Fprintf(&key, "COMMIT_EDITMSG@%d;", msg.UnixNano())
			}
		}
	}
	staged, ix, err := r.stagedPaths()
	if err != nil {
		return s, err
	}
	if len(s.Signs) == 0 && len(s.Stale) == 0 {
		// (a revert of memfsd's commit stages exactly what a write-back
		// does: with its REVERT_HEAD, however old, it is the person's)
		staged = r.dropClobbered(ix, staged)
	}
	if len(staged) > 0 {
		// Staged long ago (the index untouched since) is left behind
		// too: still never memfsd's to commit, but not waited on.
		s.Staged = staged
		if fi, err := gitstore.StatGitFile(r.GitDir, "index"); err == nil && maxAge > 0 && now.Sub(fi.ModTime()) > maxAge {
			s.Stale = append(s.Stale, "staged")
		} else {
			s.Signs = append(s.Signs, "staged")
		}
		for _, p := range staged {
			if e, ok := ix.Lookup(p); ok {
				fmt.Fprintf(&key, "%s=%s;", p, e.Hash)
			} else {
				fmt.Fprintf(&key, "%s=-;", p)
			}
		}
	}
	s.Key = key.String()
	return s, nil
}

// branchMoved is the newest mtime of the files a move of the branch
// rewrites (its loose ref, packed-refs, the reflogs, HEAD).
func (r *Repo) branchMoved() time.Time {
	var t time.Time
	for _, rel := range []string{r.branchRef(), "packed-refs", "logs/HEAD", "logs/" + r.branchRef(), "HEAD"} {
		if fi, err := gitstore.StatGitFile(r.GitDir, rel); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}

// stagedPaths lists the paths whose index entry differs from HEAD's tree,
// sorted, with the index read: memfsd writes HEAD's entry for every path it commits, restores
// or holds, so a difference is someone else's staging.
func (r *Repo) stagedPaths() ([]string, *index.Index, error) {
	head, err := r.Head()
	if err != nil {
		return nil, nil, err
	}
	var tracked map[string]object.TreeEntry // HEAD's files, read only
	if !head.IsZero() {
		// flattenCommit keeps HEAD's files (r.flat): read them there,
		// not copied, as this runs before every commit.
		if err := r.flattenCommit(head, nil); err != nil {
			return nil, nil, err
		}
		tracked = r.flat
	}
	ix, stamp, err := r.readIndexStamped()
	if err != nil {
		return nil, nil, err
	}
	staged := stagedAgainst(ix, tracked)
	r.look = &stagedLook{stamp: stamp, head: head, staged: staged}
	return staged, ix, nil
}

// stagedLook is what the last look at a person's git (PersonGit) found
// staged by someone else, on which index and HEAD: the staging the caller
// decided on. A commit that finds more staged (a `git add` just after the
// look) moves no branch: the person's commit is likely under way
// (ErrPersonGitActive).
type stagedLook struct {
	stamp  indexfile.Stamp
	head   plumbing.Hash
	staged []string
}

// newStaged lists the paths, other than ours, staged by someone else in
// ix (over head) that the last look did not see (all of them without a
// look).
func (r *Repo) newStaged(ix *index.Index, head plumbing.Hash, ours map[string]string) ([]string, error) {
	staged, err := r.othersStaged(ix, head, ours)
	if err != nil || r.look == nil {
		return staged, err
	}
	out := staged[:0]
	for _, p := range staged {
		if _, known := slices.BinarySearch(r.look.staged, p); !known {
			out = append(out, p)
		}
	}
	return out, nil
}

// recentEntry is what a window of memfsd's changed a path's index entry
// from (old) and to (new), as entriesKey has them.
type recentEntry struct {
	old, new string
	at       time.Time
}

// recentKeep is how long a window's changes are remembered (dropClobbered).
const recentKeep = 30 * time.Second

// noteWindow remembers the index entries a window of memfsd's changed.
func (r *Repo) noteWindow(ix *index.Index, touched map[string]bool, base map[string]string) {
	if !r.opts.YieldToPerson {
		return
	}
	now := time.Now()
	if r.recent == nil {
		r.recent = map[string]recentEntry{}
	}
	for p, e := range r.recent {
		if now.Sub(e.at) > recentKeep {
			delete(r.recent, p)
		}
	}
	for p := range touched {
		if old, ok := base[p]; ok {
			r.recent[p] = recentEntry{old: old, new: entriesKey(ix, p), at: now}
		}
	}
}

// dropClobbered takes out of staged (sorted) the paths whose index entry
// is what it was before a recent window of memfsd's while HEAD has what
// the window set: a git command read the index before that window and
// wrote it back after (git merge, revert and stash read it long before
// they lock it), undoing memfsd's entries, not staging anything of a
// person's. They are put back at the next commit (r.clobbered). Only
// looked at when no operation is in progress (a revert of memfsd's commit
// stages exactly that, with REVERT_HEAD).
func (r *Repo) dropClobbered(ix *index.Index, staged []string) []string {
	if len(r.recent) == 0 || len(staged) == 0 || r.look == nil {
		return staged
	}
	var tracked map[string]object.TreeEntry
	if !r.look.head.IsZero() {
		if err := r.flattenCommit(r.look.head, nil); err != nil {
			return staged
		}
		tracked = r.flat
	}
	out := staged[:0:0]
	for _, p := range staged {
		rc, ok := r.recent[p]
		head := ""
		if t, in := tracked[p]; in {
			head = fmt.Sprintf("0:%s:%o;", t.Hash, t.Mode)
		}
		if ok && entriesKey(ix, p) == rc.old && head == rc.new {
			if r.clobbered == nil {
				r.clobbered = map[string]string{}
			}
			r.clobbered[p] = rc.old
			continue
		}
		out = append(out, p)
	}
	if len(out) < len(staged) {
		r.look.staged = out
	}
	return out
}

// stagedAgainst lists, sorted, the paths whose entry in ix differs from
// tracked (HEAD's files): a file added, changed or removed in the index, or
// in conflict.
func stagedAgainst(ix *index.Index, tracked map[string]object.TreeEntry) []string {
	var out []string
	seen := make(map[string]bool, len(ix.Entries))
	for _, e := range ix.Entries {
		if seen[e.Path] {
			continue
		}
		seen[e.Path] = true
		if e.Stage != 0 {
			out = append(out, e.Path) // in conflict
			continue
		}
		info := e.Info()
		if t, ok := tracked[e.Path]; !ok || t.Hash != info.Hash || t.Mode != info.Mode {
			out = append(out, e.Path)
		}
	}
	for p := range tracked {
		if !seen[p] {
			out = append(out, p) // removed from the index
		}
	}
	slices.Sort(out)
	return out
}

// stagedIn reports whether the index ix holds for p something else than
// HEAD's entry e (inHead false: HEAD has no p).
func stagedIn(ix *index.Index, p string, e object.TreeEntry, inHead bool) bool {
	got, ok := ix.Lookup(p)
	switch {
	case !ok && !inHead:
		return false
	case ok != inHead:
		return true
	}
	return got.Hash != e.Hash || got.Mode != e.Mode
}

// CommitStaged commits, as who, what the index holds for those of paths
// that someone else staged and left (their index entries exactly, not the
// work tree's bytes; a path in conflict is left as it is), in one commit
// on top of the branch. The index is not rewritten: it then matches the
// new HEAD for those paths. It is how staging left behind past the bound
// is kept without being made the agent's own write.
func (r *Repo) CommitStaged(paths []string, message string, who Signature) (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.unlock()
	if err := r.checkHead(); err != nil {
		return plumbing.ZeroHash, err
	}
	lk, err := gitstore.AcquireLock(filepath.Join(r.GitDir, "index"), r.opts.LockWait, r.spares)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer r.indexLockTimer()()
	defer lk.Rollback() // the index stays as it is
	parent, err := r.Head()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var parentTree plumbing.Hash
	if !parent.IsZero() {
		if parentTree, err = r.objs.CommitTree(parent); err != nil {
			return parent, err
		}
	}
	ix, err := r.readIndex()
	if err != nil {
		return parent, err
	}
	var changes []gitstore.Change
	for _, p := range paths {
		var e object.TreeEntry
		inHead := false
		if !parentTree.IsZero() {
			if e, inHead, err = r.objs.EntryAt(parentTree, p); err != nil {
				return parent, err
			}
		}
		if !stagedIn(ix, p, e, inHead) || slices.ContainsFunc(ix.Entries, func(x index.Entry) bool { return x.Path == p && x.Stage != 0 }) {
			continue
		}
		c := gitstore.Change{Path: p}
		if got, ok := ix.Lookup(p); ok {
			c.Hash, c.Mode = got.Hash, got.Mode
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return parent, nil
	}
	var res CommitResult
	tip, _, err := r.commitChangesAs(who, parent, parentTree, changes, message, time.Now(), &res)
	if err != nil || tip == parent {
		return parent, err
	}
	ref, err := gitstore.PrepareRef(r.GitDir, r.branchRef(), parent, tip, r.opts.LockWait, r.spares, r.reflog(reflogCommitMsg(parent, tip, 1, message)))
	if err != nil {
		return parent, err
	}
	defer ref.Rollback()
	if err := r.objs.Flush(true); err != nil {
		return parent, err
	}
	if err := ref.Commit(false); err != nil {
		return parent, err
	}
	r.markOwn()
	return tip, nil
}

// memfsdLock reports whether the lock file fi is a memfsd's: a regular
// file that also has a name in a spare folder (gitstore.AcquireLock links
// a spare into place), where git's own lock has one name.
func memfsdLock(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && st.Nlink > 1
}
