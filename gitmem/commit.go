package gitmem

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNothingToCommit is returned by CommitWrite when the paths already
// match HEAD.
var ErrNothingToCommit = errors.New("nothing to commit")

// CommitWrite commits exactly paths (created, changed or deleted in the work
// tree) as one commit on the branch, with git's locks: index.lock is held
// for the whole write, the ref moves by compare-and-swap through
// <ref>.lock, then the new index is renamed into place. The cost follows the
// paths' depth and the index size, never the number of commits.
func (r *Repo) CommitWrite(paths []string, message string) (plumbing.Hash, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, err := r.commitPaths(paths, message, time.Now())
	if err != nil && !errors.Is(err, ErrNothingToCommit) {
		return h, fmt.Errorf("commit %s: %w", strings.Join(paths, ", "), err)
	}
	return h, err
}

func (r *Repo) commitPaths(paths []string, message string, when time.Time) (plumbing.Hash, error) {
	clean := make([]string, 0, len(paths))
	for _, p := range paths {
		c, err := cleanPath(p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		clean = append(clean, c)
	}
	if err := r.checkHead(); err != nil {
		return plumbing.ZeroHash, err
	}
	lk, err := acquireLock(filepath.Join(r.GitDir, "index"), r.opts.LockWait, r.spares)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer lk.rollback()

	// Read HEAD only under index.lock: a git commit running beside us holds
	// it too, so HEAD cannot move between here and our compare-and-swap
	// unless someone ignores the lock (the CAS then catches it).
	parent, err := r.Head()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var parentTree plumbing.Hash
	if !parent.IsZero() {
		if parentTree, err = r.objs.commitTree(parent); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	ix, err := readRawIndex(filepath.Join(r.GitDir, "index"))
	if err != nil {
		return plumbing.ZeroHash, err
	}

	changes := make([]change, 0, len(clean))
	touched := make(map[string]bool, len(clean))
	for _, p := range clean {
		f, err := r.readWorkFile(p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		touched[p] = true
		if f == nil {
			changes = append(changes, change{Path: p})
			ix.remove(p)
			continue
		}
		h, err := r.objs.write(plumbing.BlobObject, f.data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		changes = append(changes, change{Path: p, Hash: h, Mode: f.mode})
		ix.set(p, h, f.mode, f.st)
	}
	tree, err := r.objs.applyChanges(parentTree, changes)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if tree == parentTree && !parent.IsZero() {
		return parent, ErrNothingToCommit
	}
	var parents []plumbing.Hash
	if !parent.IsZero() {
		parents = append(parents, parent)
	}
	sig := object.Signature{Name: r.opts.Author.Name, Email: r.opts.Author.Email, When: when}
	commit, err := r.objs.write(plumbing.CommitObject, encodeCommit(tree, parents, sig, sig, message))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	r.objs.rememberCommit(commit, tree)
	if err := r.objs.flush(); err != nil {
		return plumbing.ZeroHash, err
	}

	ix.smudgeRacy(touched)
	if err := lk.write(ix.encode(), false); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := casRef(r.GitDir, r.branchRef(), parent, commit, r.opts.LockWait, r.objs.sync, r.spares); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := lk.commit(); err != nil {
		// The commit is in; only the index is stale (git status shows the
		// change as staged-back). The next write rebuilds those entries.
		r.log.Warn("commit landed but the index was not updated", "commit", commit.String(), "err", err)
	}
	return commit, nil
}

// encodeCommit is a commit object's body.
func encodeCommit(tree plumbing.Hash, parents []plumbing.Hash, author, committer object.Signature, message string) []byte {
	var b bytes.Buffer
	b.WriteString("tree " + tree.String() + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p.String() + "\n")
	}
	b.WriteString("author " + sigLine(author) + "\n")
	b.WriteString("committer " + sigLine(committer) + "\n\n")
	b.WriteString(strings.TrimRight(message, "\n") + "\n")
	return b.Bytes()
}

func sigLine(s object.Signature) string {
	who, when := s, s.When
	_, offset := when.Zone()
	sign := '+'
	if offset < 0 {
		sign = '-'
		offset = -offset
	}
	tz := fmt.Sprintf("%c%02d%02d", sign, offset/3600, (offset%3600)/60)
	return sanitizeSig(who.Name) + " <" + sanitizeSig(who.Email) + "> " + strconv.FormatInt(when.Unix(), 10) + " " + tz
}

// sanitizeSig strips what would break a signature line (git does the same).
func sanitizeSig(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
}
