// Package replay rebuilds local commits on top of a remote tip: a replay
// re-applies each commit the remote lacks, merging file by file (one side
// changed → that side; both → a line merge; a true conflict → theirs at the
// path and ours beside it as a conflict copy); a restore, for unrelated
// histories, re-applies every local file the remote lacks or has
// differently in one commit. It writes objects only (package gitstore):
// no ref moves, no work tree. The repository moves the branch afterwards,
// by compare-and-swap, under its lock.
package replay

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/ancestry"
	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitfmt/merge3"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/worktree"
)

// Result is the new tip built by a replay or a restore.
type Result struct {
	Head      plumbing.Hash
	Replayed  int
	Conflicts []string
}

// Replay rebuilds the local commits that the remote lacks on top of
// remote, oldest first (first parents only), merging file by file, with
// who (its name and email; the time is now) as their committer. Only
// objects are written: no ref moves here.
func Replay(objs *gitstore.Objects, local, remote plumbing.Hash, who object.Signature) (Result, error) {
	res := Result{Head: remote}
	mine, err := ancestry.LocalOnly(objs, local, remote)
	if err != nil {
		return res, err
	}
	tip := remote
	tipTree, err := objs.CommitTree(remote)
	if err != nil {
		return res, err
	}
	for _, c := range mine {
		var parentTree plumbing.Hash
		if len(c.ParentHashes) > 0 {
			if parentTree, err = objs.CommitTree(c.ParentHashes[0]); err != nil {
				return res, err
			}
		}
		diffs, err := objs.DiffTrees(parentTree, c.TreeHash, "", nil)
		if err != nil {
			return res, err
		}
		changes, conflicts, err := mergeChanges(objs, tipTree, diffs, c.Hash)
		if err != nil {
			return res, err
		}
		if len(changes) == 0 {
			continue // the remote already has this commit's effect
		}
		tree, err := objs.ApplyChanges(tipTree, changes)
		if err != nil {
			return res, err
		}
		if tree == tipTree {
			continue
		}
		committer := object.Signature{Name: who.Name, Email: who.Email, When: time.Now()}
		msg := c.Message
		if len(conflicts) > 0 {
			msg = strings.TrimRight(msg, "\n") + "\n\nmemfsd: conflict copies: " + strings.Join(conflicts, ", ") + "\n"
		}
		h, err := objs.Write(plumbing.CommitObject, codec.EncodeCommit(tree, []plumbing.Hash{tip}, c.Author, committer, msg))
		if err != nil {
			return res, err
		}
		objs.RememberCommit(h, tree)
		tip, tipTree = h, tree
		res.Replayed++
		res.Conflicts = append(res.Conflicts, conflicts...)
	}
	res.Head = tip
	return res, objs.Flush(true)
}

func sameEntry(a object.TreeEntry, aok bool, b object.TreeEntry, bok bool) bool {
	if !aok || !bok {
		return aok == bok
	}
	return a.Hash == b.Hash && a.Mode == b.Mode
}

// mergeChanges turns one local commit's file changes into changes on top of
// the tree tip. One side changed → that side; both → a line merge; a true
// conflict → theirs at the path and ours beside it as a conflict copy;
// delete against modify → the modified file.
func mergeChanges(objs *gitstore.Objects, tip plumbing.Hash, diffs []gitstore.FileChange, local plumbing.Hash) ([]gitstore.Change, []string, error) {
	var out []gitstore.Change
	var conflicts []string
	for _, d := range diffs {
		from, fromOK := d.From, !d.From.Hash.IsZero()
		to, toOK := d.To, !d.To.Hash.IsZero()
		if toOK {
			// A file of ours where their tree has a folder (or under what
			// is a file in theirs) would replace theirs wholesale: ours
			// goes beside it as a conflict copy instead.
			clash, err := objs.ClashesAt(tip, d.Path)
			if err != nil {
				return nil, nil, err
			}
			if clash {
				copyPath := worktree.ConflictName(d.Path, local)
				if clash2, err := objs.ClashesAt(tip, copyPath); err == nil && !clash2 {
					out = append(out, gitstore.Change{Path: copyPath, Hash: to.Hash, Mode: to.Mode})
					conflicts = append(conflicts, copyPath)
				}
				continue
			}
		}
		cur, curOK, err := objs.EntryAt(tip, d.Path)
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
			if base, err = objs.Blob(from.Hash); err != nil {
				return nil, nil, err
			}
		}
		ours, err := objs.Blob(to.Hash)
		if err != nil {
			return nil, nil, err
		}
		theirs, err := objs.Blob(cur.Hash)
		if err != nil {
			return nil, nil, err
		}
		if to.Mode == filemode.Regular || to.Mode == filemode.Executable {
			if merged, ok := merge3.Merge(base, ours, theirs); ok {
				h, err := objs.Write(plumbing.BlobObject, merged)
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

// Restore builds, on top of remote, one commit by who (name and email; the
// time is now) that re-applies every file of local's tree (mine, its files
// by path) that the remote's tree (theirs) lacks or has differently (the
// latter as conflict copies): used when the histories are unrelated.
func Restore(objs *gitstore.Objects, local, remote plumbing.Hash, mine, theirs map[string]object.TreeEntry, who object.Signature) (Result, error) {
	res := Result{Head: remote}
	var changes []gitstore.Change
	paths := make([]string, 0, len(mine))
	for p := range mine {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	remoteTree, err := objs.CommitTree(remote)
	if err != nil {
		return res, err
	}
	for _, p := range paths {
		e := mine[p]
		t, ok := theirs[p]
		clash := false
		if !ok {
			if clash, err = objs.ClashesAt(remoteTree, p); err != nil {
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
	tree, err := objs.ApplyChanges(remoteTree, changes)
	if err != nil {
		return res, err
	}
	sig := object.Signature{Name: who.Name, Email: who.Email, When: time.Now()}
	msg := fmt.Sprintf("memfsd: restore %d local files after the remote history was replaced\n\nOld local tip: %s\n", len(changes), local)
	h, err := objs.Write(plumbing.CommitObject, codec.EncodeCommit(tree, []plumbing.Hash{remote}, sig, sig, msg))
	if err != nil {
		return res, err
	}
	objs.RememberCommit(h, tree)
	res.Head, res.Replayed = h, 1
	return res, objs.Flush(true)
}
