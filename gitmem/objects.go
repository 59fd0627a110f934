package gitmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/gitfmt/pack"
)

// objectStore writes objects itself, one small pack per flush (go-git's
// SetEncodedObject stages every object in a temp file under objects/pack
// and re-writes objects a pack already holds), and reads through go-git's
// storage with its own recent objects in front (writepack.go).
type objectStore struct {
	dir  string // .git/objects
	st   *filesystem.Storage
	rd   objectReader // st, with pending and recent objects in front
	sync bool
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
	trees   map[plumbing.Hash]*object.Tree
	// commitTrees maps commits to their root trees: a write reads its
	// parent's tree, which is nearly always the commit written before.
	commitTrees map[plumbing.Hash]plumbing.Hash
	// commits caches decoded commits: history walks read the same ones
	// over and over.
	commits map[plumbing.Hash]*object.Commit
	spares  *spares
	// looseSince counts objects written since the last repack began, and
	// writePacks the packs they went into.
	looseSince atomic.Int64
	writePacks atomic.Int64
	// syncMu guards syncFD: the objects folder, held open for the repo's
	// life so syncfs reports every writeback error since it was opened (a
	// fresh descriptor would miss those from before it).
	syncMu sync.Mutex
	syncFD *os.File
}

// commitTree returns the root tree of commit h.
func (s *objectStore) commitTree(h plumbing.Hash) (plumbing.Hash, error) {
	if t, ok := s.commitTrees[h]; ok {
		return t, nil
	}
	c, err := s.commit(h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return c.TreeHash, nil
}

func (s *objectStore) rememberCommit(h, tree plumbing.Hash) {
	if len(s.commitTrees) >= objectCacheMax {
		clear(s.commitTrees)
	}
	s.commitTrees[h] = tree
}

const objectCacheMax = 16384

// remember records h, pending or in one of memfsd's packs, as present.
func (s *objectStore) remember(h plumbing.Hash) {
	if len(s.present) >= objectCacheMax {
		clear(s.present)
	}
	s.present[h] = true
}

// cacheTree keeps a decoded tree (its content, which its id fixes; not a
// claim that it is still stored).
func (s *objectStore) cacheTree(h plumbing.Hash, t *object.Tree) {
	if len(s.trees) >= objectCacheMax/4 {
		clear(s.trees)
	}
	s.trees[h] = t
}

func newObjectStore(gitDir string, st *filesystem.Storage, sync bool) *objectStore {
	s := &objectStore{
		dir: filepath.Join(gitDir, "objects"), st: st, sync: sync,
		present: map[plumbing.Hash]bool{}, trees: map[plumbing.Hash]*object.Tree{},
		commitTrees: map[plumbing.Hash]plumbing.Hash{},
		commits:     map[plumbing.Hash]*object.Commit{},
	}
	s.rd = objectReader{EncodedObjectStorer: st, s: s}
	return s
}

// rereadPacks makes go-git look at objects/pack afresh: it drops the pack
// list and closes the pack files it keeps open (a pack that a repack or a
// person's git gc removed would otherwise stay open, its disk space held,
// for the daemon's life). go-git then sees the store's recent packs too.
func (s *objectStore) rereadPacks() {
	_ = s.st.ObjectStorage.Close() // go-git's storage stays usable: it reopens on demand
	s.st.ObjectStorage.Reindex()
	clear(s.recent)
}

// stalePacks reports whether err may come from go-git's stale view of the
// packs: the object moved into a pack it has not listed, or a pack it
// listed is gone.
func stalePacks(err error) bool {
	return errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, dotgit.ErrPackfileNotFound)
}

// retryStale runs read, which needs an object that exists, and runs it
// again after go-git re-reads the pack list while it fails as a stale list
// would: the git CLI may have packed objects behind our back, and a
// person's `git repack -a -d` removes dozens of packs one by one, so go-git
// may list a pack that is gone when it opens it (and then keeps a partial
// index). Five tries, 150 ms in all at most, and only on that error.
func (s *objectStore) retryStale(read func() error) error {
	err := read()
	for i := 0; stalePacks(err) && i < 5; i++ {
		if i > 0 {
			time.Sleep(time.Duration(5<<i) * time.Millisecond)
		}
		s.rereadPacks()
		err = read()
	}
	return err
}

// has reports whether the object exists, loose or packed. Only memfsd's
// own objects are cached as present (present.go): one found loose or in
// another's pack may be pruned behind memfsd's back.
func (s *objectStore) has(h plumbing.Hash) bool {
	if s.isPresent(h) {
		return true
	}
	if _, err := os.Stat(s.loosePath(h)); err == nil {
		return true
	}
	err := s.rd.HasEncodedObject(h)
	if err != nil {
		s.rereadPacks() // the git CLI may have packed it
		err = s.st.HasEncodedObject(h)
	}
	return err == nil
}

func (s *objectStore) loosePath(h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(s.dir, hex[:2], hex[2:])
}

// write stores data as an object of type t unless it exists already: in
// memory until the next flush packs it (writepack.go). data must not
// change afterwards.
func (s *objectStore) write(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
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
	if _, err := os.Stat(s.loosePath(h)); err == nil {
		return h, nil
	}
	s.stage(h, t, data)
	return h, nil
}

// flush makes the objects written so far durable before a ref may point at
// them: it writes them as one pack and its index, then one syncfs(2) on the
// repository's filesystem hardens both and the folder naming them (on a
// quiet filesystem about one fsync). With always, it syncs even when no
// object was written (a ref's new value waits on it, and the files of a
// fetch or a write beside the store).
// If the pack cannot be written, the objects are forgotten (no cache says
// they exist) and the caller's ref must not move.
func (s *objectStore) flush(always bool) error {
	wrote := len(s.pending) > 0
	if err := s.writePending(); err != nil {
		s.forgetPending()
		return err
	}
	s.dropPending()
	if !wrote && !always {
		return nil
	}
	return s.syncAll()
}

// syncAll hardens everything written under the object store (a fetched
// pack and its index included: go-git's pack writer never fsyncs) before a
// ref may point into it. A no-op with fsync off.
func (s *objectStore) syncAll() error {
	if !s.sync {
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

// watch opens the descriptor syncAll flushes through, from which on its
// syncfs reports writeback errors. Open calls it; syncAll opens it late
// for a repo that had no objects folder yet (a clone).
func (s *objectStore) watch() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	_ = s.watchLocked()
}

func (s *objectStore) watchLocked() error {
	if s.syncFD != nil || !s.sync {
		return nil
	}
	f, err := os.Open(s.dir)
	if err != nil {
		return err
	}
	s.syncFD = f
	return nil
}

// close releases the store's descriptors: the sync one and go-git's packs.
func (s *objectStore) close() {
	s.syncMu.Lock()
	if s.syncFD != nil {
		s.syncFD.Close()
		s.syncFD = nil
	}
	s.syncMu.Unlock()
	_ = s.st.Close()
}

// SyncFiles makes every file written so far on the repository's
// filesystem durable (one syncfs), for a writer whose file was not followed
// by a commit. A no-op with fsync off.
func (r *Repo) SyncFiles() error { return r.objs.syncAll() }

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// tree reads a tree; the zero hash is the empty tree.
func (s *objectStore) tree(h plumbing.Hash) (*object.Tree, error) {
	if h.IsZero() {
		return &object.Tree{}, nil
	}
	if t, ok := s.trees[h]; ok {
		return t, nil
	}
	var t *object.Tree
	err := s.retryStale(func() (err error) {
		t, err = object.GetTree(s.rd, h)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	s.cacheTree(h, t)
	return t, nil
}

// commit reads a commit.
func (s *objectStore) commit(h plumbing.Hash) (*object.Commit, error) {
	if c, ok := s.commits[h]; ok {
		return c, nil
	}
	var c *object.Commit
	err := s.retryStale(func() (err error) {
		c, err = object.GetCommit(s.rd, h)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	s.rememberCommit(h, c.TreeHash)
	if len(s.commits) >= objectCacheMax {
		clear(s.commits)
	}
	s.commits[h] = c
	return c, nil
}

// blob reads a blob's content.
func (s *objectStore) blob(h plumbing.Hash) ([]byte, error) {
	if _, data, ok := s.ownObject(h); ok {
		return data, nil
	}
	var buf bytes.Buffer
	err := s.retryStale(func() error {
		buf.Reset()
		b, err := object.GetBlob(s.rd, h)
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
