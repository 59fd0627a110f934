// Package history reads a repository's past without writing anything: a
// path's history as `git log -- <path>` lists it, a file at a revision,
// and a revision named as git names one (HEAD~2, an abbreviated id,
// origin/main). It knows the object store and refs (gitstore), nothing of
// a work tree or of syncs; the repository (gitmem) hands it a Reader.
package history

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/worktree"
)

// Reader reads one repository's history. The object store's caches are
// the repository's, shared with its writes, so every read runs inside
// Locked.
type Reader struct {
	Objects *gitstore.Objects
	GitDir  string
	Branch  string // the kept branch, named in errors
	// Head is the kept branch's tip (zero on an unborn branch).
	Head func() (plumbing.Hash, error)
	// Locked runs f as one section under the repository's lock, released
	// even when f panics.
	Locked func(f func())
	// Step, when set (tests only), runs under the lock at the start of
	// each round of a walk.
	Step func()
}

// Change kinds of a commit's files, as in memfsd's commit messages.
const (
	ChangeCreate = "create"
	ChangeUpdate = "update"
	ChangeDelete = "delete"
)

// Author is who wrote a commit.
type Author struct {
	Name  string
	Email string
}

// Commit is one commit of a path's history, as `git log` shows it.
type Commit struct {
	Hash    plumbing.Hash
	Subject string // the message's first paragraph, lines joined by spaces (git's %s)
	Body    string // the rest of the message (git's %b), trailing space cut
	Author  Author
	When    time.Time // author time, in the author's zone
	// Changes are the files under the path that the commit changed against
	// its first parent (all of them for a root commit), sorted, at most
	// MaxChanges; MoreChanges counts the ones left out.
	Changes     []PathChange
	MoreChanges int
}

// PathChange is one file a commit changed: ChangeCreate, ChangeUpdate or
// ChangeDelete.
type PathChange struct {
	Path string
	Kind string
}

// MaxChanges bounds the files listed per commit of a history.
const MaxChanges = 100

// lockEvery is how many commits a history walk reads per hold of
// the repository's lock: a long walk (a path changed once in years) lets
// the writes it would block go in between.
const lockEvery = 256

// ErrNotInRevision is a path with no file at the revision asked.
var ErrNotInRevision = errors.New("no such file at that revision")

// Log lists the commits that changed path (a file, a folder, or ""
// for every commit), newest first, at most limit, from the kept branch's
// tip. It walks as `git log -- <path>` does (commit-date order; a merge
// whose path equals one parent's follows only that parent and is not
// listed), reading only the commits it walks and, in each, the folders on
// the path: the cost follows the commits walked, which stops at limit.
func (rd Reader) Log(path string, limit int) ([]Commit, error) {
	p, err := historyPath(path)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("history: limit %d: want at least 1", limit)
	}
	head, err := rd.Head()
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", p, err)
	}
	out := []Commit{}
	if head.IsZero() {
		return out, nil
	}
	w := newWalk(rd, p)
	rd.Locked(func() { err = w.push(head) })
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", p, err)
	}
	for len(out) < limit && w.queue.Len() > 0 {
		rd.Locked(func() {
			if rd.Step != nil {
				rd.Step()
			}
			for n := 0; n < lockEvery && len(out) < limit && w.queue.Len() > 0; n++ {
				var hc *Commit
				if hc, err = w.step(); err != nil {
					break
				}
				if hc != nil {
					out = append(out, *hc)
				}
			}
		})
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", p, err)
		}
	}
	return out, nil
}

// historyPath checks a history's path: "" (or "/", ".") for the whole
// memory, else a tracked path, a trailing slash allowed for a folder.
func historyPath(path string) (string, error) {
	p := strings.TrimSuffix(path, "/")
	if p == "" || p == "." {
		return "", nil
	}
	return worktree.Clean(p)
}

// walk is git's revision walk limited to one path: a queue of
// commits by commit date, each read once.
type walk struct {
	rd    Reader
	path  string
	parts []string // path's names, root first
	seen  map[plumbing.Hash]bool
	queue commitQueue
	order int
	// levels[i] memoises, per tree at depth i on the path, its entry for
	// parts[i]: each tree is read once, though a commit's trees are
	// looked at as its own and again as its child's parent's.
	levels []map[plumbing.Hash]object.TreeEntry
	reads  int // trees read (the walk's cost; tests check it)
}

func newWalk(rd Reader, path string) *walk {
	w := &walk{rd: rd, path: path, seen: map[plumbing.Hash]bool{}}
	if path != "" {
		w.parts = strings.Split(path, "/")
		w.levels = make([]map[plumbing.Hash]object.TreeEntry, len(w.parts))
		for i := range w.levels {
			w.levels[i] = map[plumbing.Hash]object.TreeEntry{}
		}
	}
	return w
}

func (w *walk) push(h plumbing.Hash) error {
	if w.seen[h] {
		return nil
	}
	w.seen[h] = true
	c, err := w.rd.Objects.Commit(h)
	if err != nil {
		return err
	}
	w.order++
	heap.Push(&w.queue, queued{c: c, order: w.order})
	return nil
}

// step takes the newest queued commit, queues the parents the walk goes
// on to, and returns the commit when it changed the path (nil when not).
func (w *walk) step() (*Commit, error) {
	c := heap.Pop(&w.queue).(queued).c
	show, follow, err := w.judge(c)
	if err != nil {
		return nil, err
	}
	for _, h := range follow {
		if err := w.push(h); err != nil {
			return nil, err
		}
	}
	if !show {
		return nil, nil
	}
	return w.describe(c)
}

// judge is git's default history simplification for the path: a commit
// is shown when the path differs from every parent's (or, for a root
// commit, exists); a merge equal to a parent there follows that parent
// only. Every commit is shown when the path is the whole memory.
func (w *walk) judge(c *object.Commit) (bool, []plumbing.Hash, error) {
	if w.path == "" {
		return true, c.ParentHashes, nil
	}
	if len(c.ParentHashes) == 0 {
		mine, err := w.entry(c.TreeHash)
		return !mine.Hash.IsZero(), nil, err
	}
	for _, ph := range c.ParentHashes {
		theirs, err := w.rd.Objects.CommitTree(ph)
		if err != nil {
			return false, nil, err
		}
		same, err := w.same(c.TreeHash, theirs)
		if err != nil {
			return false, nil, err
		}
		if same {
			return false, []plumbing.Hash{ph}, nil
		}
	}
	return true, c.ParentHashes, nil
}

// same reports whether trees a and b hold the same thing at the walk's
// path. It compares level by level, as git's path-limited diff does: an
// equal entry on the way settles it without reading below, so a commit
// that changed another folder costs the trees above the fork only.
func (w *walk) same(a, b plumbing.Hash) (bool, error) {
	for i := range w.parts {
		if a == b {
			return true, nil
		}
		ea, err := w.child(i, a)
		if err != nil {
			return false, err
		}
		eb, err := w.child(i, b)
		if err != nil {
			return false, err
		}
		if ea == eb || i == len(w.parts)-1 {
			return ea == eb, nil
		}
		a, b = subtree(ea), subtree(eb)
	}
	return a == b, nil
}

// entry is what stands at the walk's path in tree: a file's or a folder's
// entry, its name cleared (zero when nothing does).
func (w *walk) entry(tree plumbing.Hash) (object.TreeEntry, error) {
	if w.path == "" {
		return object.TreeEntry{Mode: filemode.Dir, Hash: tree}, nil
	}
	var e object.TreeEntry
	for i := range w.parts {
		var err error
		if e, err = w.child(i, tree); err != nil {
			return object.TreeEntry{}, err
		}
		tree = subtree(e)
	}
	return e, nil
}

// child is tree's entry for the path's name at depth i (tree being at
// that depth), its name cleared, memoised per tree.
func (w *walk) child(i int, tree plumbing.Hash) (object.TreeEntry, error) {
	if tree.IsZero() {
		return object.TreeEntry{}, nil
	}
	if e, ok := w.levels[i][tree]; ok {
		return e, nil
	}
	w.reads++
	e, _, err := lookupEntry(w.rd.Objects, tree, w.parts[i])
	if err != nil {
		return object.TreeEntry{}, err
	}
	e.Name = ""
	w.levels[i][tree] = e
	return e, nil
}

// subtree is the folder an entry names, zero for a file or nothing: the
// path cannot go on below it.
func subtree(e object.TreeEntry) plumbing.Hash {
	if e.Mode != filemode.Dir {
		return plumbing.ZeroHash
	}
	return e.Hash
}

// describe reads what a shown commit says and what it changed under the
// path against its first parent.
func (w *walk) describe(c *object.Commit) (*Commit, error) {
	subject, body := splitMessage(c.Message)
	hc := &Commit{
		Hash: c.Hash, Subject: subject, Body: body,
		Author: Author{Name: c.Author.Name, Email: c.Author.Email}, When: c.Author.When,
	}
	var parentTree plumbing.Hash
	if len(c.ParentHashes) > 0 {
		t, err := w.rd.Objects.CommitTree(c.ParentHashes[0])
		if err != nil {
			return nil, err
		}
		parentTree = t
	}
	var changes []gitstore.FileChange
	var err error
	if w.path == "" {
		changes, err = w.rd.Objects.DiffTrees(parentTree, c.TreeHash, "", nil)
	} else {
		var from, to object.TreeEntry
		if from, err = w.entry(parentTree); err == nil {
			if to, err = w.entry(c.TreeHash); err == nil {
				changes, err = w.rd.Objects.DiffEntry(w.path, from, to, nil)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(changes, func(a, b gitstore.FileChange) int { return strings.Compare(a.Path, b.Path) })
	for i, ch := range changes {
		if i == MaxChanges {
			hc.MoreChanges = len(changes) - i
			break
		}
		kind := ChangeUpdate
		switch {
		case ch.From.Hash.IsZero():
			kind = ChangeCreate
		case ch.To.Hash.IsZero():
			kind = ChangeDelete
		}
		hc.Changes = append(hc.Changes, PathChange{Path: ch.Path, Kind: kind})
	}
	return hc, nil
}

// splitMessage cuts a commit message as git's %s and %b do: the subject
// is the first paragraph with its lines joined by spaces, the body what
// follows the blank line after it.
func splitMessage(msg string) (string, string) {
	msg = strings.TrimLeft(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	para, body, _ := strings.Cut(msg, "\n\n")
	lines := strings.Split(strings.TrimRight(para, "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " "), strings.TrimRight(strings.TrimLeft(body, "\n"), " \t\n")
}

// anyEntryAt is the entry at p in tree, a file's or a folder's ("" is the
// tree itself, as a folder).
func anyEntryAt(s *gitstore.Objects, tree plumbing.Hash, p string) (object.TreeEntry, bool, error) {
	if p == "" {
		return object.TreeEntry{Mode: filemode.Dir, Hash: tree}, !tree.IsZero(), nil
	}
	parts := strings.Split(p, "/")
	for i, name := range parts {
		if tree.IsZero() {
			return object.TreeEntry{}, false, nil
		}
		e, ok, err := lookupEntry(s, tree, name)
		if err != nil || !ok {
			return object.TreeEntry{}, false, err
		}
		if i == len(parts)-1 {
			return e, true, nil
		}
		if e.Mode != filemode.Dir {
			return object.TreeEntry{}, false, nil
		}
		tree = e.Hash
	}
	return object.TreeEntry{}, false, nil
}

// lookupEntry finds name in one tree. A tree not in the decoded cache is
// scanned in its raw form and not cached: a history walk reads thousands
// of trees once each, and decoding them all (or flushing the cache the
// writes' hot folders live in) cost more than the scan.
func lookupEntry(s *gitstore.Objects, tree plumbing.Hash, name string) (object.TreeEntry, bool, error) {
	if t, ok := s.Trees[tree]; ok {
		for _, e := range t.Entries {
			if e.Name == name {
				return e, true, nil
			}
		}
		return object.TreeEntry{}, false, nil
	}
	var raw []byte
	err := s.RetryStale(func() error {
		o, err := s.Reader.EncodedObject(plumbing.TreeObject, tree)
		if err != nil {
			return err
		}
		rd, err := o.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		raw, err = io.ReadAll(rd)
		return err
	})
	if err != nil {
		return object.TreeEntry{}, false, fmt.Errorf("read tree %s: %w", tree, err)
	}
	// Entries are "<octal mode> <name>\0<20-byte id>".
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		nul := bytes.IndexByte(raw, 0)
		if sp < 0 || nul < sp || len(raw) < nul+21 {
			return object.TreeEntry{}, false, fmt.Errorf("read tree %s: malformed entry", tree)
		}
		if string(raw[sp+1:nul]) == name {
			mode, err := filemode.New(string(raw[:sp]))
			if err != nil {
				return object.TreeEntry{}, false, fmt.Errorf("read tree %s: %w", tree, err)
			}
			var h plumbing.Hash
			copy(h[:], raw[nul+1:nul+21])
			return object.TreeEntry{Name: name, Mode: mode, Hash: h}, true, nil
		}
		raw = raw[nul+21:]
	}
	return object.TreeEntry{}, false, nil
}

// File is a file's content at a commit.
type File struct {
	Commit plumbing.Hash
	Blob   plumbing.Hash
	Mode   filemode.FileMode
	Data   []byte
}

// FileAt reads path at revision rev (any Resolve spelling). A path
// absent there, or a folder there, is ErrNotInRevision.
func (rd Reader) FileAt(path, rev string) (f File, err error) {
	p, err := worktree.Clean(path)
	if err != nil {
		return File{}, err
	}
	h, err := rd.Resolve(rev)
	if err != nil {
		return File{}, err
	}
	rd.Locked(func() { f, err = rd.fileAt(p, rev, h) })
	return f, err
}

// fileAt is FileAt's read of p in commit h, under the lock.
func (rd Reader) fileAt(p, rev string, h plumbing.Hash) (File, error) {
	tree, err := rd.Objects.CommitTree(h)
	if err != nil {
		return File{}, fmt.Errorf("read %s at %s: %w", p, rev, err)
	}
	e, ok, err := anyEntryAt(rd.Objects, tree, p)
	if err != nil {
		return File{}, fmt.Errorf("read %s at %s: %w", p, rev, err)
	}
	if !ok {
		return File{}, fmt.Errorf("read %s at %s (%s): %w", p, rev, gitstore.Short(h), ErrNotInRevision)
	}
	if e.Mode == filemode.Dir || e.Mode == filemode.Submodule {
		return File{}, fmt.Errorf("read %s at %s (%s): it is a folder there, not a file (list its history instead): %w", p, rev, gitstore.Short(h), ErrNotInRevision)
	}
	data, err := rd.Objects.Blob(e.Hash)
	if err != nil {
		return File{}, fmt.Errorf("read %s at %s: %w", p, rev, err)
	}
	if data == nil {
		data = []byte{}
	}
	return File{Commit: h, Blob: e.Hash, Mode: e.Mode, Data: data}, nil
}

// commitQueue orders commits newest first by committer date, as git's
// walk does; among equal dates, the first queued first.
type commitQueue []queued

type queued struct {
	c     *object.Commit
	order int
}

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	ti, tj := q[i].c.Committer.When, q[j].c.Committer.When
	if !ti.Equal(tj) {
		return ti.After(tj)
	}
	return q[i].order < q[j].order
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *commitQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
