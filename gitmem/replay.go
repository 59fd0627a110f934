package gitmem

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitfmt/merge3"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/worktree"
)

// localOnly lists local's first-parent chain back to (not including) the
// first commit that remote's history contains, oldest first. It walks
// remote's history breadth-first and local's chain in turns, so the cost
// follows the distance to the merge base, not the length of the history.
func (r *Repo) localOnly(local, remote plumbing.Hash) ([]*object.Commit, error) {
	theirs := newWalker(r.objs, remote)
	var chain []*object.Commit
	inChain := map[plumbing.Hash]int{}
	cut := -1 // index in chain of the first commit remote has
	next := local
	for cut < 0 {
		progressed := false
		if !next.IsZero() {
			if theirs.seen[next] {
				cut = len(chain)
				break
			}
			c, err := r.objs.Commit(next)
			if err != nil {
				return nil, err
			}
			inChain[next] = len(chain)
			chain = append(chain, c)
			next = plumbing.ZeroHash
			if len(c.ParentHashes) > 0 {
				next = c.ParentHashes[0]
			}
			progressed = true
		}
		if ok, err := theirs.step(); err != nil {
			return nil, err
		} else if ok {
			progressed = true
			for _, h := range theirs.fresh {
				if i, ok := inChain[h]; ok && (cut < 0 || i < cut) {
					cut = i
				}
			}
		}
		if !progressed {
			break // both walks ended: unrelated, everything is local
		}
	}
	if cut >= 0 {
		chain = chain[:cut]
	}
	slices.Reverse(chain)
	return chain, nil
}

// reaches reports whether from's history contains target, walking back at
// most until commits older than target by a day (clock skew allowance).
func (r *Repo) reaches(from, target plumbing.Hash) (bool, error) {
	tc, err := r.objs.Commit(target)
	if err != nil {
		return false, err
	}
	floor := tc.Committer.When.Add(-24 * time.Hour)
	w := newWalker(r.objs, from)
	for !w.done() {
		if w.seen[target] {
			return true, nil
		}
		h := w.queue[0]
		c, err := r.objs.Commit(h)
		if err != nil {
			return false, err
		}
		if c.Committer.When.Before(floor) {
			w.queue = w.queue[1:] // too old to lead to target
			continue
		}
		if _, err := w.step(); err != nil {
			return false, err
		}
	}
	return w.seen[target], nil
}

// entryAt finds the file at p in tree (ok false when absent or a folder).
func (s *objectStore) entryAt(tree plumbing.Hash, p string) (object.TreeEntry, bool, error) {
	parts := strings.Split(p, "/")
	for i, name := range parts {
		t, err := s.Tree(tree)
		if err != nil {
			return object.TreeEntry{}, false, err
		}
		var found *object.TreeEntry
		for k := range t.Entries {
			if t.Entries[k].Name == name {
				found = &t.Entries[k]
				break
			}
		}
		if found == nil {
			return object.TreeEntry{}, false, nil
		}
		if i == len(parts)-1 {
			if found.Mode == filemode.Dir || found.Mode == filemode.Submodule {
				return object.TreeEntry{}, false, nil
			}
			return *found, true, nil
		}
		if found.Mode != filemode.Dir {
			return object.TreeEntry{}, false, nil
		}
		tree = found.Hash
	}
	return object.TreeEntry{}, false, nil
}

func sameEntry(a object.TreeEntry, aok bool, b object.TreeEntry, bok bool) bool {
	if !aok || !bok {
		return aok == bok
	}
	return a.Hash == b.Hash && a.Mode == b.Mode
}

// replayResult is the new tip built by a replay or a restore.
type replayResult struct {
	Head      plumbing.Hash
	Replayed  int
	Conflicts []string
}

// replay rebuilds the local commits that the remote lacks on top of
// remote, oldest first (first parents only), merging file by file. Only
// objects are written: no ref moves here.
func (r *Repo) replay(local, remote plumbing.Hash) (replayResult, error) {
	res := replayResult{Head: remote}
	mine, err := r.localOnly(local, remote)
	if err != nil {
		return res, err
	}
	tip := remote
	tipTree, err := r.objs.CommitTree(remote)
	if err != nil {
		return res, err
	}
	for _, c := range mine {
		var parentTree plumbing.Hash
		if len(c.ParentHashes) > 0 {
			if parentTree, err = r.objs.CommitTree(c.ParentHashes[0]); err != nil {
				return res, err
			}
		}
		diffs, err := r.objs.DiffTrees(parentTree, c.TreeHash, "", nil)
		if err != nil {
			return res, err
		}
		changes, conflicts, err := r.mergeChanges(tipTree, diffs, c.Hash)
		if err != nil {
			return res, err
		}
		if len(changes) == 0 {
			continue // the remote already has this commit's effect
		}
		tree, err := r.objs.ApplyChanges(tipTree, changes)
		if err != nil {
			return res, err
		}
		if tree == tipTree {
			continue
		}
		committer := object.Signature{Name: r.opts.Author.Name, Email: r.opts.Author.Email, When: time.Now()}
		msg := c.Message
		if len(conflicts) > 0 {
			msg = strings.TrimRight(msg, "\n") + "\n\nmemfsd: conflict copies: " + strings.Join(conflicts, ", ") + "\n"
		}
		h, err := r.objs.Write(plumbing.CommitObject, codec.EncodeCommit(tree, []plumbing.Hash{tip}, c.Author, committer, msg))
		if err != nil {
			return res, err
		}
		r.objs.RememberCommit(h, tree)
		tip, tipTree = h, tree
		res.Replayed++
		res.Conflicts = append(res.Conflicts, conflicts...)
	}
	res.Head = tip
	return res, r.objs.Flush(true)
}

// mergeChanges turns one local commit's file changes into changes on top of
// the tree tip. One side changed → that side; both → a line merge; a true
// conflict → theirs at the path and ours beside it as a conflict copy;
// delete against modify → the modified file.
func (r *Repo) mergeChanges(tip plumbing.Hash, diffs []gitstore.FileChange, local plumbing.Hash) ([]gitstore.Change, []string, error) {
	var out []gitstore.Change
	var conflicts []string
	for _, d := range diffs {
		from, fromOK := d.From, !d.From.Hash.IsZero()
		to, toOK := d.To, !d.To.Hash.IsZero()
		if toOK {
			// A file of ours where their tree has a folder (or under what
			// is a file in theirs) would replace theirs wholesale: ours
			// goes beside it as a conflict copy instead.
			clash, err := r.objs.clashesAt(tip, d.Path)
			if err != nil {
				return nil, nil, err
			}
			if clash {
				copyPath := worktree.ConflictName(d.Path, local)
				if clash2, err := r.objs.clashesAt(tip, copyPath); err == nil && !clash2 {
					out = append(out, gitstore.Change{Path: copyPath, Hash: to.Hash, Mode: to.Mode})
					conflicts = append(conflicts, copyPath)
				}
				continue
			}
		}
		cur, curOK, err := r.objs.entryAt(tip, d.Path)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case sameEntry(cur, curOK, to, toOK):
			continue // already there
		case sameEntry(cur, curOK, from, fromOK):
			out = append(out, gitstore.Change{Path: d.Path, Hash: to.Hash, Mode: to.Mode}) // only we changed it
			continue
		case !toOK:
			continue // we deleted, they changed: keep theirs
		case !curOK:
			out = append(out, gitstore.Change{Path: d.Path, Hash: to.Hash, Mode: to.Mode}) // they deleted, we changed: keep ours
			continue
		}
		var base []byte
		if fromOK {
			if base, err = r.objs.Blob(from.Hash); err != nil {
				return nil, nil, err
			}
		}
		ours, err := r.objs.Blob(to.Hash)
		if err != nil {
			return nil, nil, err
		}
		theirs, err := r.objs.Blob(cur.Hash)
		if err != nil {
			return nil, nil, err
		}
		if to.Mode == filemode.Regular || to.Mode == filemode.Executable {
			if merged, ok := merge3.Merge(base, ours, theirs); ok {
				h, err := r.objs.Write(plumbing.BlobObject, merged)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, gitstore.Change{Path: d.Path, Hash: h, Mode: to.Mode})
				continue
			}
		}
		copyPath := worktree.ConflictName(d.Path, local)
		out = append(out, gitstore.Change{Path: copyPath, Hash: to.Hash, Mode: to.Mode})
		conflicts = append(conflicts, copyPath)
	}
	return out, conflicts, nil
}

// restore builds, on top of remote, one commit that re-applies every file of
// local's tree that the remote lacks or has differently (the latter as
// conflict copies): used when the histories are unrelated.
func (r *Repo) restore(local, remote plumbing.Hash) (replayResult, error) {
	res := replayResult{Head: remote}
	mine := map[string]object.TreeEntry{}
	if err := r.flattenCommit(local, mine); err != nil {
		return res, err
	}
	theirs := map[string]object.TreeEntry{}
	if err := r.flattenCommit(remote, theirs); err != nil {
		return res, err
	}
	var changes []gitstore.Change
	paths := make([]string, 0, len(mine))
	for p := range mine {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	remoteTree, err := r.objs.CommitTree(remote)
	if err != nil {
		return res, err
	}
	for _, p := range paths {
		e := mine[p]
		t, ok := theirs[p]
		clash := false
		if !ok {
			if clash, err = r.objs.clashesAt(remoteTree, p); err != nil {
				return res, err
			}
		}
		switch {
		case clash: // a folder of theirs (or a file on our path): ours beside it
			cp := worktree.ConflictName(p, local)
			changes = append(changes, gitstore.Change{Path: cp, Hash: e.Hash, Mode: e.Mode})
			res.Conflicts = append(res.Conflicts, cp)
		case !ok:
			changes = append(changes, gitstore.Change{Path: p, Hash: e.Hash, Mode: e.Mode})
		case t.Hash != e.Hash || t.Mode != e.Mode:
			cp := worktree.ConflictName(p, local)
			changes = append(changes, gitstore.Change{Path: cp, Hash: e.Hash, Mode: e.Mode})
			res.Conflicts = append(res.Conflicts, cp)
		}
	}
	if len(changes) == 0 {
		return res, nil
	}
	tree, err := r.objs.ApplyChanges(remoteTree, changes)
	if err != nil {
		return res, err
	}
	sig := object.Signature{Name: r.opts.Author.Name, Email: r.opts.Author.Email, When: time.Now()}
	msg := fmt.Sprintf("memfsd: restore %d local files after the remote history was replaced\n\nOld local tip: %s\n", len(changes), local)
	h, err := r.objs.Write(plumbing.CommitObject, codec.EncodeCommit(tree, []plumbing.Hash{remote}, sig, sig, msg))
	if err != nil {
		return res, err
	}
	r.objs.RememberCommit(h, tree)
	res.Head, res.Replayed = h, 1
	return res, r.objs.Flush(true)
}

// clashesAt reports whether a file at p would clash with tree: a folder
// stands at p, or a file stands where one of p's folders goes.
func (s *objectStore) clashesAt(tree plumbing.Hash, p string) (bool, error) {
	parts := strings.Split(p, "/")
	for i, name := range parts {
		t, err := s.Tree(tree)
		if err != nil {
			return false, err
		}
		var found *object.TreeEntry
		for k := range t.Entries {
			if t.Entries[k].Name == name {
				found = &t.Entries[k]
				break
			}
		}
		if found == nil {
			return false, nil
		}
		last := i == len(parts)-1
		isDir := found.Mode == filemode.Dir
		switch {
		case last:
			return isDir, nil
		case !isDir:
			return true, nil // a file where our folder goes
		}
		tree = found.Hash
	}
	return false, nil
}
