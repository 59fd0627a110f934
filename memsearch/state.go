// Package memsearch is an agent's tiers and search index (package search)
// kept at its repository's HEAD, the answers' text and the memory_search
// tool's input.
package memsearch

import (
	"errors"
	"sync"

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
}

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
	err = st.catchUp(repo)
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
}
