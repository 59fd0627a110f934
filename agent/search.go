package agent

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/search"
)

// ErrBadSearch marks a search refused for its input (a bad query, limit
// or folder); the caller answers 400 / a tool error with its text.
var ErrBadSearch = errors.New("bad search")

// searchState is an agent's tiers and search index, built from HEAD on
// first use and brought up to date before each answer from the files
// whose blobs changed since (a commit of memfsd's, a pull, a replay, a
// recovery: every way HEAD moves), so a write costs nothing until the
// next search and then only its own files.
type searchState struct {
	mu    sync.Mutex
	ix    *search.Index
	head  plumbing.Hash
	blobs map[string]plumbing.Hash // path → blob indexed
	// reindexed counts the paths handed to the index since the agent
	// started (tests: a write re-indexes its own files, not the tree).
	reindexed int
}

// SearchResult is the answer of a search.
type SearchResult struct {
	Hits     []search.Hit `json:"hits"`
	Revision string       `json:"revision"`
}

// Search finds the files best matching query in HEAD's memory (SPEC
// §11); limit 0 is search.DefaultLimit. Nothing is written.
func (a *Agent) Search(query string, limit int) (SearchResult, error) {
	if limit < 0 || limit > search.MaxLimit {
		return SearchResult{}, fmt.Errorf("search: %w: limit %d: want 1 to %d (default %d)", ErrBadSearch, limit, search.MaxLimit, search.DefaultLimit)
	}
	if _, err := search.CheckQuery(query); err != nil {
		return SearchResult{}, fmt.Errorf("search: %w: %w", ErrBadSearch, err)
	}
	var res SearchResult
	err := a.withSearch(func(ix *search.Index, repo *gitmem.Repo, head plumbing.Hash) error {
		hits, err := ix.Search(query, limit, func(p string) ([]byte, bool) {
			h, ok := a.search.blobs[p]
			if !ok {
				return nil, false
			}
			data, err := repo.Blob(h)
			return data, err == nil
		})
		res = SearchResult{Hits: hits, Revision: hashString(head)}
		return err
	})
	if err != nil {
		return SearchResult{}, fmt.Errorf("search %s: %w", a.ID, err)
	}
	return res, nil
}

// Overview is folder's L1 (children with their L0s, folders first) at
// HEAD; folder is relative to the memory folder or under /memories.
func (a *Agent) Overview(folder string) (search.Overview, error) {
	rel := folder
	if strings.HasPrefix(folder, "/") {
		if folder != "/memories" && !strings.HasPrefix(folder, "/memories/") {
			return search.Overview{}, fmt.Errorf("overview: %w: folder %q: want a folder under /memories", ErrBadSearch, folder)
		}
		rel = strings.TrimPrefix(folder, "/memories")
	}
	rel = strings.Trim(rel, "/")
	if strings.Contains("/"+rel+"/", "/../") || strings.Contains(rel, "\\") {
		return search.Overview{}, fmt.Errorf("overview: %w: folder %q: want a folder under /memories", ErrBadSearch, folder)
	}
	var o search.Overview
	err := a.withSearch(func(ix *search.Index, _ *gitmem.Repo, _ plumbing.Hash) error {
		var ok bool
		if o, ok = ix.L1(rel); !ok {
			return fmt.Errorf("%w: no folder %q in memory", ErrBadSearch, "/memories/"+rel)
		}
		return nil
	})
	if err != nil {
		return search.Overview{}, fmt.Errorf("overview %s: %w", a.ID, err)
	}
	return o, nil
}

// OverviewText renders an overview in memfsd's context format: the
// folder's /memories path and counts, then one line per child with its L0.
func OverviewText(o search.Overview) string {
	o.Folder = strings.TrimSuffix("memories/"+o.Folder, "/")
	return o.Text()
}

// withSearch runs fn with the index brought up to HEAD, under the
// agent's search lock; then it tells the pool the index's size and drops
// the indexes of the agents the pool evicts (outside the lock, so two
// agents evicting each other cannot deadlock).
func (a *Agent) withSearch(fn func(*search.Index, *gitmem.Repo, plumbing.Hash) error) error {
	repo := a.repository()
	if repo == nil {
		return ErrNotReady
	}
	st := &a.search
	st.mu.Lock()
	err := a.catchUpSearch(repo)
	head := st.head
	if err == nil {
		err = fn(st.ix, repo, head)
	}
	size := 0
	if st.ix != nil {
		size = st.ix.Bytes()
	}
	st.mu.Unlock()
	if size > 0 {
		for _, k := range a.cfg.SearchPool.Use(a, size) {
			k.(*Agent).dropSearch()
		}
	}
	return err
}

// catchUpSearch brings the index to HEAD: one ref read when nothing
// moved, else the paths whose blobs differ from the ones indexed.
func (a *Agent) catchUpSearch(repo *gitmem.Repo) error {
	st := &a.search
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

// dropSearch forgets the index (the pool's memory bound); the next search
// rebuilds it.
func (a *Agent) dropSearch() {
	a.search.mu.Lock()
	defer a.search.mu.Unlock()
	a.search.ix, a.search.blobs, a.search.head = nil, nil, plumbing.ZeroHash
}

// ReadSearch is Search from disk, with no daemon.
func ReadSearch(cfg *Config, id, query string, limit int) (SearchResult, error) {
	var res SearchResult
	err := withDiskRepo(cfg, id, func(a *Agent) (err error) {
		defer a.cfg.SearchPool.Forget(a)
		res, err = a.Search(query, limit)
		return err
	})
	return res, err
}

// ReadOverview is Overview from disk, with no daemon.
func ReadOverview(cfg *Config, id, folder string) (search.Overview, error) {
	var o search.Overview
	err := withDiskRepo(cfg, id, func(a *Agent) (err error) {
		defer a.cfg.SearchPool.Forget(a)
		o, err = a.Overview(folder)
		return err
	})
	return o, err
}

// SearchText renders a search's hits for a person or a model: per hit its
// score, /memories path and L0, the folders it was found through with
// their scores, and the matched lines numbered as the memory tool's view
// numbers them.
func SearchText(res SearchResult) string {
	if len(res.Hits) == 0 {
		return "No memory file matches; try other words, or view /memories to browse.\n"
	}
	var b strings.Builder
	for _, h := range res.Hits {
		fmt.Fprintf(&b, "%.3f  /memories/%s  %s\n", h.Score, h.Path, h.L0)
		var trail []string
		for _, s := range h.Trail {
			trail = append(trail, fmt.Sprintf("%s/ %.3f", s.Folder, s.Score))
		}
		if len(trail) > 0 {
			fmt.Fprintf(&b, "       via %s\n", strings.Join(trail, " > "))
		}
		for _, l := range h.Lines {
			fmt.Fprintf(&b, "%6d\t%s\n", l.Line, l.Text)
		}
	}
	return b.String()
}
