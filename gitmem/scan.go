package gitmem

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/worktree"
)

// Change kinds reported by DirtyPaths, as in memfsd's commit messages.
const (
	ChangeCreate = history.ChangeCreate
	ChangeUpdate = history.ChangeUpdate
	ChangeDelete = history.ChangeDelete
)

// DirtyPath is a work-tree path that differs from HEAD.
type DirtyPath struct {
	Path string
	Kind string // ChangeCreate, ChangeUpdate or ChangeDelete
}

// SkippedPath is a path in the work tree that is not a memory path
// (worktree.Check: a .git in any case at any depth, ...): never committed,
// and worth telling the agent. A skipped folder is one entry.
type SkippedPath struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// WorkScan is what a scan of the work tree found.
type WorkScan struct {
	Dirty   []DirtyPath   // paths that differ from HEAD, sorted
	Skipped []SkippedPath // untrackable paths left out, sorted
}

// DirtyPaths lists the work-tree paths that differ from HEAD, sorted.
// Files whose index stat still matches are not read; .gitignore is honoured
// for untracked files.
func (r *Repo) DirtyPaths() ([]DirtyPath, error) {
	sc, err := r.ScanWork()
	return sc.Dirty, err
}

// ScanWork is DirtyPaths that also lists the paths it skipped because they
// cannot be tracked (worktree.Skip), so the agent can be told.
func (r *Repo) ScanWork() (WorkScan, error) {
	r.mu.Lock()
	defer r.unlock()
	return r.scanWork()
}

func (r *Repo) scanWork() (WorkScan, error) {
	var sc WorkScan
	head, err := r.Head()
	if err != nil {
		return sc, err
	}
	tracked := map[string]object.TreeEntry{}
	if !head.IsZero() {
		if err := r.flattenCommit(head, tracked); err != nil {
			return sc, err
		}
	}
	ix, err := r.readIndex()
	if err != nil {
		return sc, err
	}
	// .gitignore files are read as the walk reaches them, through the work
	// tree's descriptor (a link or FIFO named .gitignore is not followed or
	// waited on); a folder's patterns apply below it only (their domain).
	var patterns []gitignore.Pattern
	var ignore gitignore.Matcher
	readIgnore := func(dir string) {
		rel := ".gitignore"
		var domain []string
		if dir != "" {
			rel = dir + "/.gitignore"
			domain = strings.Split(dir, "/")
		}
		f, err := r.wt.Read(rel)
		if err != nil || f == nil || f.Mode == worktree.Symlink {
			return
		}
		for _, line := range strings.Split(string(f.Data), "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			patterns = append(patterns, gitignore.ParsePattern(line, domain))
		}
		ignore = gitignore.NewMatcher(patterns)
	}
	var dirty []DirtyPath
	var stale []string
	seen := make(map[string]bool, len(tracked))
	// The walk lists each folder through its descriptor beneath the work
	// tree (worktree.Dir): a folder swapped for a link mid-walk is not
	// followed out of the folder.
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := r.wt.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				return nil // gone, or a link now: nothing of the tree below
			}
			return err
		}
		for _, e := range entries {
			if e.Name == ".gitignore" && !e.IsDir() && !e.IsLink() {
				readIgnore(dir)
			}
		}
		for _, e := range entries {
			rel := e.Name
			if dir != "" {
				rel = dir + "/" + e.Name
			}
			if skip, why := worktree.Skip(rel, e.IsDir()); skip {
				if why != "" {
					sc.Skipped = append(sc.Skipped, SkippedPath{Path: rel, Reason: why})
				}
				continue
			}
			if e.IsDir() {
				if err := walk(rel); err != nil {
					return err
				}
				continue
			}
			entry, isTracked := tracked[rel]
			if !isTracked && ignore != nil && ignore.Match(strings.Split(rel, "/"), false) {
				continue
			}
			seen[rel] = true
			h, mode, fromIndex, err := r.workHashStat(rel, e.Stat, ix)
			if err != nil {
				return err
			}
			ie, inIndex := ix.Lookup(rel)
			switch {
			case inIndex && !fromIndex && ie.Hash == h && ie.Mode == mode:
				stale = append(stale, rel) // same content, stale stat: refresh below
			case isTracked && h == entry.Hash && mode == entry.Mode && (!inIndex || ie.Hash != h || ie.Mode != mode):
				// The file is as HEAD has it but the index says otherwise
				// (a commit killed between the branch's move and the
				// index's write): git would show "D " and "??" for it.
				stale = append(stale, rel)
			}
			switch {
			case !isTracked:
				dirty = append(dirty, DirtyPath{rel, ChangeCreate})
			case h != entry.Hash || mode != entry.Mode:
				dirty = append(dirty, DirtyPath{rel, ChangeUpdate})
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return sc, fmt.Errorf("scan %s: %w", r.Dir, err)
	}
	for p := range tracked {
		if !seen[p] {
			dirty = append(dirty, DirtyPath{p, ChangeDelete})
		}
	}
	slices.SortFunc(dirty, func(a, b DirtyPath) int { return strings.Compare(a.Path, b.Path) })
	if len(stale) > 0 {
		r.refreshIndex(stale, tracked)
	}
	sc.Dirty = dirty
	return sc, nil
}

// refreshIndex records the current stat of files whose content matches
// their index entry, as `git status` does, so the next scan need not read
// them again, and puts back the entry of a file whose content matches HEAD's
// (head) when the index lost or changed it. The files are read and the new
// index prepared without index.lock; the lock is taken only to rename it
// in, and only if no one else holds it and the index is still the one
// read (else skipped: the next scan tries again).
func (r *Repo) refreshIndex(paths []string, head map[string]object.TreeEntry) {
	ix, stamp, err := r.readIndexStamped()
	if err != nil {
		return
	}
	now := time.Now().Unix()
	changed := 0
	for _, p := range paths {
		f, err := r.readWorkFile(p)
		if err != nil || f == nil || f.st == nil || f.tooLarge > 0 {
			continue // gone (leave it to be checked again), or over the cap
		}
		h := blobHash(f.data)
		if e, ok := ix.Lookup(p); ok && h == e.Hash && f.mode == e.Mode {
			if f.st.Mtim.Sec >= now {
				continue // racy: leave it to be checked again
			}
			ix.Set(p, e.Hash, e.Mode, f.st)
			changed++
			continue
		}
		if te, ok := head[p]; ok && h == te.Hash && f.mode == te.Mode {
			st := f.st
			if st.Mtim.Sec >= now {
				st = nil // racy: no stat, so git compares the content
			}
			ix.Set(p, te.Hash, te.Mode, st)
			changed++
		}
	}
	if changed == 0 {
		return
	}
	skip := make(map[string]bool, len(paths))
	for _, p := range paths {
		skip[p] = true
	}
	ix.SmudgeRacy(skip)
	data, err := r.ixf.Encode(ix)
	if err != nil {
		return
	}
	if cur, err := r.ixf.Stamp(); err != nil || cur != stamp || r.notQuiet(cur) > 0 {
		return // changed, or a person's git at work: not now
	}
	pending, err := gitstore.PrepareLock(filepath.Join(r.GitDir, "index"), data, r.spares)
	if err != nil {
		return
	}
	defer pending.Drop()
	lk, err := pending.Acquire(0)
	if err != nil {
		return
	}
	defer r.indexLockTimer()()
	defer lk.Rollback()
	if !r.ixf.Same(stamp) {
		return
	}
	if lk.Commit() == nil {
		r.ixf.Written(ix, data)
	}
}

// workHashStat is the blob id and mode of the work-tree file rel (whose
// lstat is st), taken from the index when its stat still matches; it also
// says whether the index's stat vouched for the file (no read needed).
func (r *Repo) workHashStat(rel string, st *syscall.Stat_t, ix *index.Index) (plumbing.Hash, filemode.FileMode, bool, error) {
	mode := filemode.Regular
	switch {
	case st.Mode&syscall.S_IFMT == syscall.S_IFLNK:
		mode = filemode.Symlink
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return plumbing.ZeroHash, 0, false, nil
	case st.Mode&0o111 != 0:
		mode = filemode.Executable
	}
	if e, ok := ix.Lookup(rel); ok && e.Mode == mode && statMatches(e, st, ix.Mtime) {
		return e.Hash, mode, true, nil
	}
	f, err := r.wt.ReadLimit(rel, r.maxFileBytes())
	if errors.Is(err, worktree.ErrTooLarge) {
		// Not read: no blob of it can be HEAD's (the zero id matches
		// nothing), so it is a change, which the commit then holds.
		return plumbing.ZeroHash, mode, false, nil
	}
	if err != nil || f == nil {
		return plumbing.ZeroHash, mode, false, err
	}
	return blobHash(f.Data), gitMode(f.Mode), false, nil
}

// flattenCommit fills files with every blob of the commit's tree. The last
// tree flattened is kept: status, the turn's answer and the mass-delete
// guard all ask for HEAD's files, and HEAD rarely moves between them.
func (r *Repo) flattenCommit(h plumbing.Hash, files map[string]object.TreeEntry) error {
	tree, err := r.objs.CommitTree(h)
	if err != nil {
		return err
	}
	if tree != r.flatTree || r.flat == nil {
		flat := make(map[string]object.TreeEntry, len(r.flat))
		if err := r.flattenTree(tree, "", flat); err != nil {
			return err
		}
		r.flat, r.flatTree = flat, tree
	}
	if files == nil {
		return nil // the caller reads r.flat
	}
	for p, e := range r.flat {
		files[p] = e
	}
	return nil
}

func (r *Repo) flattenTree(h plumbing.Hash, prefix string, files map[string]object.TreeEntry) error {
	t, err := r.objs.Tree(h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		p := prefix + e.Name
		switch e.Mode {
		case filemode.Dir:
			if err := r.flattenTree(e.Hash, p+"/", files); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			files[p] = e
		}
	}
	return nil
}

// ChangeKind says what committing path would record: ChangeCreate,
// ChangeUpdate or ChangeDelete, or "" when the path is neither in HEAD nor
// in the work tree.
func (r *Repo) ChangeKind(path string) (string, error) {
	p, err := worktree.Clean(path)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.unlock()
	tracked := false
	if head, err := r.Head(); err != nil {
		return "", err
	} else if !head.IsZero() {
		tree, err := r.objs.CommitTree(head)
		if err != nil {
			return "", err
		}
		if _, tracked, err = r.objs.EntryAt(tree, p); err != nil {
			return "", err
		}
	}
	st, err := r.wt.Lstat(p)
	exists := err == nil && !isDirStat(st)
	switch {
	case exists && tracked:
		return ChangeUpdate, nil
	case exists:
		return ChangeCreate, nil
	case tracked:
		return ChangeDelete, nil
	}
	return "", nil
}

// ConflictCopies lists the conflict copies in HEAD.
func (r *Repo) ConflictCopies() ([]string, error) {
	r.mu.Lock()
	defer r.unlock()
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return nil, err
	}
	if err := r.flattenCommit(head, map[string]object.TreeEntry{}); err != nil {
		return nil, err
	}
	var out []string
	for p := range r.flat {
		if worktree.IsConflictCopy(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// TrackedFiles lists the files in HEAD.
func (r *Repo) TrackedFiles() ([]string, error) {
	r.mu.Lock()
	defer r.unlock()
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return nil, err
	}
	files := map[string]object.TreeEntry{}
	if err := r.flattenCommit(head, files); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// HeadFile returns the content of path in HEAD (false when absent).
func (r *Repo) HeadFile(path string) ([]byte, bool, error) {
	return r.fileAt(r.Head, path)
}

// RemoteFile returns the content of path at the last known remote tip
// (false when absent or no tip is known).
func (r *Repo) RemoteFile(path string) ([]byte, bool, error) {
	return r.fileAt(r.RemoteHead, path)
}

// fileAt reads path in the commit ref names, under r.mu.
func (r *Repo) fileAt(ref func() (plumbing.Hash, error), path string) ([]byte, bool, error) {
	p, err := worktree.Clean(path)
	if err != nil {
		return nil, false, err
	}
	r.mu.Lock()
	defer r.unlock()
	head, err := ref()
	if err != nil || head.IsZero() {
		return nil, false, err
	}
	tree, err := r.objs.CommitTree(head)
	if err != nil {
		return nil, false, err
	}
	e, ok, err := r.objs.EntryAt(tree, p)
	if err != nil || !ok {
		return nil, false, err
	}
	data, err := r.objs.Blob(e.Hash)
	return data, err == nil, err
}
