package gitmem

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/ancestry"
)

// Status is the state of the branch against the last known remote tip.
type Status struct {
	Head       plumbing.Hash
	RemoteHead plumbing.Hash
	Relation   Relation
	Ahead      int // local commits the remote lacks
	Behind     int // remote commits not in the local branch
	Dirty      []DirtyPath
	Skipped    []SkippedPath // untrackable paths the scan left out (Status only)
}

// Status reads head, remote head, how far they are apart and the dirty
// paths. It does not contact the remote (Fetch does).
func (r *Repo) Status() (Status, error) {
	r.mu.Lock()
	defer r.unlock()
	st, err := r.position()
	if err != nil {
		return st, err
	}
	sc, err := r.scanWork()
	if err != nil {
		return st, fmt.Errorf("status: %w", err)
	}
	st.Dirty, st.Skipped = sc.Dirty, sc.Skipped
	return st, nil
}

// Position is Status without the work-tree scan: head, remote head and how
// far apart they are. It costs the divergence, not the number of files.
func (r *Repo) Position() (Status, error) {
	r.mu.Lock()
	defer r.unlock()
	return r.position()
}

func (r *Repo) position() (Status, error) {
	var st Status
	var err error
	if st.Head, err = r.Head(); err != nil {
		return st, fmt.Errorf("status: %w", err)
	}
	if st.RemoteHead, err = r.RemoteHead(); err != nil {
		return st, fmt.Errorf("status: %w", err)
	}
	if st.Relation, st.Ahead, st.Behind, err = ancestry.AheadBehind(r.objs, st.Head, st.RemoteHead); err != nil {
		return st, fmt.Errorf("status: %w", err)
	}
	return st, nil
}

// FindCommit walks HEAD's first-parent chain back at most limit commits,
// newest first, for one whose message match accepts, and returns it. The
// messages are the agent's input as much as memfsd's (a shell commit, a
// reason): match decides what proves anything.
func (r *Repo) FindCommit(limit int, match func(message string) bool) (plumbing.Hash, bool, error) {
	r.mu.Lock()
	defer r.unlock()
	h, err := r.Head()
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	for i := 0; i < limit && !h.IsZero(); i++ {
		c, err := r.objs.Commit(h)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if match(c.Message) {
			return h, true, nil
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return plumbing.ZeroHash, false, nil
}

// FileEntry is a file of a commit's tree.
type FileEntry struct {
	Path string
	Blob plumbing.Hash
	Mode filemode.FileMode // filemode.Symlink for a link
}

// HeadFiles lists HEAD's files, sorted by path, with HEAD's commit id
// (zero when the branch is unborn).
func (r *Repo) HeadFiles() (plumbing.Hash, []FileEntry, error) {
	r.mu.Lock()
	defer r.unlock()
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return head, nil, err
	}
	files := map[string]object.TreeEntry{}
	if err := r.flattenCommit(head, files); err != nil {
		return head, nil, err
	}
	out := make([]FileEntry, 0, len(r.flat))
	for p, e := range r.flat {
		out = append(out, FileEntry{Path: p, Blob: e.Hash, Mode: e.Mode})
	}
	slices.SortFunc(out, func(a, b FileEntry) int { return strings.Compare(a.Path, b.Path) })
	return head, out, nil
}

// Blob reads a blob by id.
func (r *Repo) Blob(h plumbing.Hash) ([]byte, error) {
	r.mu.Lock()
	defer r.unlock()
	return r.objs.Blob(h)
}

// TreeFile is one file of a commit's tree.
type TreeFile struct {
	Path string
	Blob plumbing.Hash
	Mode filemode.FileMode
}

// sortedFiles lists r.flat (the last tree flattened) sorted by path.
func (r *Repo) sortedFiles() []TreeFile {
	out := make([]TreeFile, 0, len(r.flat))
	for p, e := range r.flat {
		out = append(out, TreeFile{Path: p, Blob: e.Hash, Mode: e.Mode})
	}
	slices.SortFunc(out, func(a, b TreeFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// HeadTreeFiles lists HEAD's files with their modes, sorted, and HEAD's
// commit id (zero, no files, on an unborn branch).
func (r *Repo) HeadTreeFiles() (plumbing.Hash, []TreeFile, error) {
	r.mu.Lock()
	defer r.unlock()
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return head, nil, err
	}
	if err := r.flattenCommit(head, map[string]object.TreeEntry{}); err != nil {
		return head, nil, err
	}
	return head, r.sortedFiles(), nil
}

// HeadFiles lists the files of HEAD as the guard's batch found it, sorted.
func (b *Batch) HeadFiles() ([]TreeFile, error) {
	if b.head.IsZero() {
		return nil, nil
	}
	if err := b.r.flattenCommit(b.head, map[string]object.TreeEntry{}); err != nil {
		return nil, err
	}
	return b.r.sortedFiles(), nil
}

// Blob reads a blob, under the lock the guard runs in.
func (b *Batch) Blob(h plumbing.Hash) ([]byte, error) { return b.r.objs.Blob(h) }
