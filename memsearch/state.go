// Package memsearch is an agent's tiers and search index (package search)
// kept at its repository's HEAD, the answers' text and the memory_search
// tool's input.
package memsearch

import (
	"bytes"
	"encoding/gob"
	"errors"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/search"
)

// ErrBad marks a search refused for its input (a bad query, limit
// or folder); the caller answers 400 / a tool error with its text.
var ErrBad = errors.New("bad search")

// State is an agent's tiers and search index, built from HEAD on
// first use and brought up to date before each answer from the files
// whose blobs changed since (a commit of memfsd's, a pull, a replay, a
// recovery: every way HEAD moves), so a write costs nothing until the
// next search and then only its own files.
type State struct {
	mu    sync.Mutex
	ix    *search.Index
	head  plumbing.Hash
	blobs map[string]plumbing.Hash // path → blob indexed
	// reindexed counts the paths handed to the index since the agent
	// started (tests: a write re-indexes its own files, not the tree).
	reindexed int
	// Disk keeps the index beside the repository between processes
	// (nil: in memory only); unsaved counts the paths reindexed since it
	// was last saved, saved when.
	Disk    Disk
	unsaved int
	saved   time.Time
	// Loaded is how many indexes were loaded from Disk (tests).
	loaded int
}

// Disk is where an index is kept between processes: Load gives the
// bytes last saved (an error when there are none or they cannot be
// read: the index is then built from git), Save replaces them.
type Disk interface {
	Load() ([]byte, error)
	Save(data []byte) error
}

// saveEvery bounds how often a daemon's index is written back as commits
// come: at most once in saveEvery (a process that exits sooner saves on
// its first search).
const saveEvery = 30 * time.Second

// Result is the answer of a search.
type Result struct {
	Hits     []search.Hit `json:"hits"`
	Revision string       `json:"revision"`
}

// With runs fn with the index brought up to HEAD, under the state's lock
// (read gives a path's bytes at the indexed HEAD), and returns the
// index's size after, for the pool's bound.
func (st *State) With(repo *gitmem.Repo, fn func(ix *search.Index, head plumbing.Hash, read func(p string) ([]byte, bool)) error) (size int, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ix == nil && st.Disk != nil {
		st.load()
	}
	err = st.catchUp(repo)
	if err == nil && st.Disk != nil && st.unsaved > 0 && (st.saved.IsZero() || time.Since(st.saved) >= saveEvery) {
		st.save()
	}
	head := st.head
	if err == nil {
		err = fn(st.ix, head, func(p string) ([]byte, bool) {
			h, ok := st.blobs[p]
			if !ok {
				return nil, false
			}
			data, err := repo.Blob(h)
			return data, err == nil
		})
	}
	if st.ix != nil {
		size = st.ix.Bytes()
	}
	return size, err
}

// Built reports whether the state holds an index now.
func (st *State) Built() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ix != nil
}

// Reindexed is how many paths the index has been handed (built or
// brought up to HEAD) since the state was made.
func (st *State) Reindexed() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.reindexed
}

// catchUp brings the index to HEAD: one ref read when nothing
// moved, else the paths whose blobs differ from the ones indexed.
func (st *State) catchUp(repo *gitmem.Repo) error {
	if cur, err := repo.Head(); err == nil && st.ix != nil && cur == st.head {
		return nil
	}
	head, files, err := repo.HeadFiles()
	if err != nil {
		return err
	}
	if st.ix == nil {
		st.ix, st.blobs = search.New(), map[string]plumbing.Hash{}
	}
	now := make(map[string]plumbing.Hash, len(files))
	var changed []string
	for _, f := range files {
		if f.Mode == filemode.Symlink {
			continue // a link is not memory of its own
		}
		now[f.Path] = f.Blob
		if st.blobs[f.Path] != f.Blob {
			changed = append(changed, f.Path)
		}
	}
	for p := range st.blobs {
		if _, ok := now[p]; !ok {
			changed = append(changed, p)
		}
	}
	var readErr error
	st.reindexed += len(changed)
	st.unsaved += len(changed)
	st.ix.Update(changed, func(p string) ([]byte, bool) {
		h, ok := now[p]
		if !ok {
			return nil, false
		}
		data, err := repo.Blob(h)
		if err != nil {
			readErr = err
			delete(now, p) // indexed as absent; read again next time
			return nil, false
		}
		return data, true
	})
	st.blobs, st.head = now, head
	if readErr != nil {
		st.head = plumbing.ZeroHash // try the missing blobs again
	}
	return readErr
}

// Drop forgets the index (the pool's memory bound); the next search
// rebuilds it.
func (st *State) Drop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ix, st.blobs, st.head = nil, nil, plumbing.ZeroHash
	st.unsaved, st.saved = 0, time.Time{}
}

// Loaded is how many indexes were loaded from Disk rather than built.
func (st *State) Loaded() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.loaded
}

// snapshotVersion is the layout of what is saved around the index's own
// snapshot (search.SnapshotVersion).
const snapshotVersion = 1

type saved struct {
	Version int
	Head    plumbing.Hash
	Paths   []string
	Blobs   []plumbing.Hash
	Index   []byte
}

// load takes the index and the blobs it was built from off Disk; one
// that cannot be read or decoded, or does not hold together, is missing
// (built from git as before). The commit it was saved at is only where
// catchUp starts: the files whose blobs differ at HEAD are re-indexed.
func (st *State) load() {
	data, err := st.Disk.Load()
	if err != nil {
		return
	}
	var s saved
	if gob.NewDecoder(bytes.NewReader(data)).Decode(&s) != nil || s.Version != snapshotVersion || len(s.Paths) != len(s.Blobs) {
		return
	}
	data = nil
	ix, err := search.LoadSnapshot(s.Index)
	if err != nil || ix.Len() != len(s.Paths) {
		return
	}
	blobs := make(map[string]plumbing.Hash, len(s.Paths))
	for i, p := range s.Paths {
		if !ix.Has(p) {
			return
		}
		blobs[p] = s.Blobs[i]
	}
	if len(blobs) != len(s.Paths) {
		return
	}
	st.ix, st.blobs, st.head = ix, blobs, s.Head
	st.loaded++
	st.saved = time.Now()
}

// save writes the index and its blobs to Disk; a failure is only a
// slower next start (the index is built from git then).
func (st *State) save() {
	if st.ix == nil || st.head.IsZero() {
		return
	}
	s := saved{Version: snapshotVersion, Head: st.head, Index: st.ix.Snapshot()}
	s.Paths = make([]string, 0, len(st.blobs))
	s.Blobs = make([]plumbing.Hash, 0, len(st.blobs))
	for p, h := range st.blobs {
		s.Paths = append(s.Paths, p)
		s.Blobs = append(s.Blobs, h)
	}
	var buf bytes.Buffer
	if gob.NewEncoder(&buf).Encode(&s) != nil {
		return
	}
	if st.Disk.Save(buf.Bytes()) == nil {
		st.unsaved, st.saved = 0, time.Now()
	}
}
