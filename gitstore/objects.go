package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitfmt/pack"
)

// Objects writes objects itself, one small pack per flush (go-git's
// SetEncodedObject stages every object in a temp file under objects/pack
// and re-writes objects a pack already holds), and reads through go-git's
// storage with its own recent objects in front (writepack.go).
type Objects struct {
	GitDir string // .git: untrusted files are read from it (ReadGitFile)
	Dir    string // .git/objects
	st     *filesystem.Storage
	Reader objectReader // st, with pending and recent objects in front
	Sync   bool
	// pending are the objects written since the last flush (pendingAt
	// indexes them); recent locates the objects of the packs written since
	// go-git last re-read the pack list.
	pending   []pack.Object
	pendingAt map[plumbing.Hash]int
	recent    map[plumbing.Hash]recentObject
	// kept are the .keep files of packs whose refs may not have moved yet.
	kept []string
	// present caches the objects of memfsd's own packs, trusted while the
	// packs of view are all there (present.go); trees caches decoded trees
	// (the root and the folders on hot paths are read back at every write).
	present map[plumbing.Hash]bool
	view    packView
	Trees   map[plumbing.Hash]*object.Tree
	// treeEntries counts the entries of the trees in Trees: a folder that
	// grows by a file at every write leaves one tree per write, each as
	// large as the folder, so a bound on the number of trees alone let the
	// cache grow with the square of the folder's size.
	treeEntries int
	// commitTrees maps commits to their root trees: a write reads its
	// parent's tree, which is nearly always the commit written before.
	commitTrees map[plumbing.Hash]plumbing.Hash
	// commits caches decoded commits: history walks read the same ones
	// over and over.
	commits map[plumbing.Hash]*object.Commit
	Spares  *Spares
	// packs are the packs walked for objects over the cap (packcap.go).
	packs packChecks
	// looseSince counts objects written since the last repack began, and
	// writePacks the packs they went into.
	LooseSince atomic.Int64
	WritePacks atomic.Int64
	// syncMu guards syncFD: the objects folder, held open for the repo's
	// life so syncfs reports every writeback error since it was opened (a
	// fresh descriptor would miss those from before it).
	syncMu sync.Mutex
	syncFD *os.File
}

// CommitTree returns the root tree of commit h.
func (s *Objects) CommitTree(h plumbing.Hash) (plumbing.Hash, error) {
	if t, ok := s.commitTrees[h]; ok {
		return t, nil
	}
	c, err := s.Commit(h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return c.TreeHash, nil
}

// RememberCommit records that commit h has the root tree tree.
func (s *Objects) RememberCommit(h, tree plumbing.Hash) {
	if len(s.commitTrees) >= objectCacheMax {
		clear(s.commitTrees)
	}
	s.commitTrees[h] = tree
}

const objectCacheMax = 16384

// remember records h, pending or in one of memfsd's packs, as present.
func (s *Objects) remember(h plumbing.Hash) {
	if len(s.present) >= objectCacheMax {
		clear(s.present)
	}
	s.present[h] = true
}

// treeCacheEntriesMax bounds the entries of the cached trees together
// (an entry is ~40 bytes plus its share of the tree: a few MiB).
const treeCacheEntriesMax = 1 << 17

// cacheTree keeps a decoded tree (its content, which its id fixes; not a
// claim that it is still stored). The cache is bounded both in trees and
// in their entries together; a tree larger than the whole bound is kept
// alone.
func (s *Objects) cacheTree(h plumbing.Hash, t *object.Tree) {
	if _, ok := s.Trees[h]; ok {
		return
	}
	if len(s.Trees) >= objectCacheMax/4 || s.treeEntries+len(t.Entries) > treeCacheEntriesMax {
		clear(s.Trees)
		s.treeEntries = 0
	}
	s.Trees[h] = t
	s.treeEntries += len(t.Entries)
}

// forgetTree drops tree h from the cache.
func (s *Objects) forgetTree(h plumbing.Hash) {
	if t, ok := s.Trees[h]; ok {
		s.treeEntries -= len(t.Entries)
		delete(s.Trees, h)
	}
}

// OpenObjects opens the object store of gitDir over go-git's storage st;
// with sync, what it writes is made durable before a ref moves.
func OpenObjects(gitDir string, st *filesystem.Storage, sync bool) *Objects {
	s := &Objects{
		GitDir: gitDir, Dir: filepath.Join(gitDir, "objects"), st: st, Sync: sync,
		present: map[plumbing.Hash]bool{}, Trees: map[plumbing.Hash]*object.Tree{},
		commitTrees: map[plumbing.Hash]plumbing.Hash{},
		commits:     map[plumbing.Hash]*object.Commit{},
	}
	s.Reader = objectReader{EncodedObjectStorer: st, s: s}
	return s
}

// RereadPacks makes go-git look at objects/pack afresh: it drops the pack
// list and closes the pack files it keeps open (a pack that a repack or a
// person's git gc removed would otherwise stay open, its disk space held,
// for the daemon's life). go-git then sees the store's recent packs too.
func (s *Objects) RereadPacks() {
	_ = s.st.ObjectStorage.Close() // go-git's storage stays usable: it reopens on demand
	s.st.ObjectStorage.Reindex()
	s.packs.stale()
	clear(s.recent)
}

// StalePacks reports whether err may come from go-git's stale view of the
// packs: the object moved into a pack it has not listed, or a pack it
// listed is gone.
func StalePacks(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, dotgit.ErrPackfileNotFound)
}

// RetryStale runs read, which needs an object that exists, and runs it
// again after go-git re-reads the pack list while it fails as a stale list
// would: the git CLI may have packed objects behind our back, and a
// person's `git repack -a -d` removes dozens of packs one by one, so go-git
// may list a pack that is gone when it opens it (and then keeps a partial
// index). Five tries, 150 ms in all at most, and only on that error.
func (s *Objects) RetryStale(read func() error) error {
	err := read()
	for i := 0; StalePacks(err) && i < 5; i++ {
		if i > 0 {
			time.Sleep(time.Duration(5<<i) * time.Millisecond)
		}
		s.RereadPacks()
		err = read()
	}
	return err
}

// Has reports whether the object exists, loose or packed. Only memfsd's
// own objects are cached as present (present.go): one found loose or in
// another's pack may be pruned behind memfsd's back.
func (s *Objects) Has(h plumbing.Hash) bool {
	if s.isPresent(h) {
		return true
	}
	if s.looseExists(h) {
		return true
	}
	err := s.Reader.HasEncodedObject(h)
	if err != nil {
		s.RereadPacks() // the git CLI may have packed it
		err = s.st.HasEncodedObject(h)
	}
	return err == nil
}

// looseExists reports whether h is a loose object: a regular file reached
// beneath .git through no link (a fan-out folder the agent swapped for a
// link to another store does not count).
func (s *Objects) looseExists(h plumbing.Hash) bool {
	hex := h.String()
	st, err := statBeneath(s.GitDir, "objects/"+hex[:2]+"/"+hex[2:])
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

// LoosePath is where h is (or would be) stored as a loose object.
func (s *Objects) LoosePath(h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(s.Dir, hex[:2], hex[2:])
}

// Write stores data as an object of type t unless it exists already: in
// memory until the next flush packs it (writepack.go). data must not
// change afterwards.
func (s *Objects) Write(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := codec.Hash(t, data)
	// Only the cache and the loose file are checked: asking go-git about
	// packs costs an open per call, and an object in two packs, or packed
	// and loose, is harmless (git itself allows it; gc drops the copy).
	// A loose object is not cached: `git prune` may remove it.
	if s.isPresent(h) {
		return h, nil
	}
	if _, ok := s.pendingAt[h]; ok {
		return h, nil
	}
	if s.looseExists(h) {
		return h, nil
	}
	s.stage(h, t, data)
	return h, nil
}

// Flush makes the objects written so far durable before a ref may point at
// them: it writes them as one pack and its index, then one syncfs(2) on the
// repository's filesystem hardens both and the folder naming them (on a
// quiet filesystem about one fsync). With always, it syncs even when no
// object was written (a ref's new value waits on it, and the files of a
// fetch or a write beside the store).
// If the pack cannot be written, the objects are forgotten (no cache says
// they exist) and the caller's ref must not move.
func (s *Objects) Flush(always bool) error {
	wrote := len(s.pending) > 0
	if err := s.writePending(); err != nil {
		s.forgetPending()
		return err
	}
	s.dropPending()
	if !wrote && !always {
		return nil
	}
	return s.SyncAll()
}

// SyncAll hardens everything written under the object store (a fetched
// pack and its index included: go-git's pack writer never fsyncs) before a
// ref may point into it. A no-op with fsync off.
func (s *Objects) SyncAll() error {
	if !s.Sync {
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if err := s.watchLocked(); err != nil {
		return fmt.Errorf("sync objects: %w", err)
	}
	if err := unix.Syncfs(int(s.syncFD.Fd())); err != nil {
		return fmt.Errorf("sync objects: %w", err)
	}
	return nil
}

// Watch opens the descriptor SyncAll flushes through, from which on its
// syncfs reports writeback errors. Open calls it; SyncAll opens it late
// for a repo that had no objects folder yet (a clone).
func (s *Objects) Watch() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	_ = s.watchLocked()
}

func (s *Objects) watchLocked() error {
	if s.syncFD != nil || !s.Sync {
		return nil
	}
	f, err := openDir(s.Dir)
	if err != nil {
		return err
	}
	s.syncFD = f
	return nil
}

// Close releases the store's descriptors: the sync one and go-git's packs.
func (s *Objects) Close() {
	s.syncMu.Lock()
	if s.syncFD != nil {
		s.syncFD.Close()
		s.syncFD = nil
	}
	s.syncMu.Unlock()
	_ = s.st.Close()
}

// SyncDir makes dir's entries durable (an fsync of the folder).
func SyncDir(dir string) error {
	f, err := openDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Tree reads a tree; the zero hash is the empty tree.
func (s *Objects) Tree(h plumbing.Hash) (*object.Tree, error) {
	if h.IsZero() {
		return &object.Tree{}, nil
	}
	if t, ok := s.Trees[h]; ok {
		return t, nil
	}
	var t *object.Tree
	err := s.RetryStale(func() (err error) {
		t, err = object.GetTree(s.Reader, h)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	s.cacheTree(h, t)
	return t, nil
}

// Commit reads a commit.
func (s *Objects) Commit(h plumbing.Hash) (*object.Commit, error) {
	if c, ok := s.commits[h]; ok {
		return c, nil
	}
	var c *object.Commit
	err := s.RetryStale(func() (err error) {
		c, err = object.GetCommit(s.Reader, h)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	s.RememberCommit(h, c.TreeHash)
	if len(s.commits) >= objectCacheMax {
		clear(s.commits)
	}
	s.commits[h] = c
	return c, nil
}

// Blob reads a blob's content.
func (s *Objects) Blob(h plumbing.Hash) ([]byte, error) {
	if _, data, ok := s.ownObject(h); ok {
		return data, nil
	}
	var buf bytes.Buffer
	err := s.RetryStale(func() error {
		buf.Reset()
		b, err := object.GetBlob(s.Reader, h)
		if err != nil {
			return err
		}
		r, err := b.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = buf.ReadFrom(r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	return buf.Bytes(), nil
}

// openDir opens a folder of the agent's .git: a FIFO (or anything but a
// folder) there is an error at once, never a wait.
func openDir(dir string) (*os.File, error) {
	for {
		fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: dir, Err: err}
		}
		return os.NewFile(uintptr(fd), dir), nil
	}
}
