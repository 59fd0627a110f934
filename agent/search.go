package agent

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/memsearch"
	"github.com/memfsd/memfsd/records"
	"github.com/memfsd/memfsd/search"
)

// ErrBadSearch marks a search refused for its input (a bad query, limit
// or folder); the caller answers 400 / a tool error with its text.
var ErrBadSearch = memsearch.ErrBad

// SearchResult is the answer of a search.
type SearchResult = memsearch.Result

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
	err := a.withSearch(func(ix *search.Index, head plumbing.Hash, read func(string) ([]byte, bool)) error {
		hits, err := ix.Search(query, limit, read)
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
	err := a.withSearch(func(ix *search.Index, _ plumbing.Hash, _ func(string) ([]byte, bool)) error {
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

// OverviewText renders an overview in memfsd's context format.
func OverviewText(o search.Overview) string { return memsearch.OverviewText(o) }

// withSearch runs fn with the index brought up to HEAD, under the
// agent's search lock; then it tells the pool the index's size and drops
// the indexes of the agents the pool evicts (outside the lock, so two
// agents evicting each other cannot deadlock).
func (a *Agent) withSearch(fn func(ix *search.Index, head plumbing.Hash, read func(string) ([]byte, bool)) error) error {
	repo := a.repository()
	if repo == nil {
		return ErrNotReady
	}
	size, err := a.search.With(repo, fn)
	if size > 0 {
		for _, k := range a.cfg.SearchPool.Use(a, size) {
			k.(*Agent).dropSearch()
		}
	}
	return err
}

// dropSearch forgets the index (the pool's memory bound); the next search
// rebuilds it.
func (a *Agent) dropSearch() { a.search.Drop() }

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

// SearchText renders a search's hits for a person or a model.
func SearchText(res SearchResult) string { return memsearch.Text(res) }

// searchIndexFile is where the agent's search index is kept between
// processes, under its unit in the home (beside records/, outside the
// memory folder and its .git, so never committed).
const searchIndexFile = "search/index"

// searchDisk keeps the agent's search index on disk, so a CLI search and
// a daemon's first search load it instead of building it from git. It is
// read beneath the unit's folder through no link, its size judged before
// the read (at most the search pool's bound: no index larger fits); one
// that cannot be read or loaded is missing.
type searchDisk struct{ a *Agent }

func (d searchDisk) Load() ([]byte, error) {
	return gitstore.ReadFileBeneath(d.a.folder, searchIndexFile, int64(d.a.cfg.SearchPool.MaxBytes))
}

func (d searchDisk) Save(data []byte) error {
	if len(data) > d.a.cfg.SearchPool.MaxBytes {
		return fmt.Errorf("save the search index: %d bytes, over the pool's %d", len(data), d.a.cfg.SearchPool.MaxBytes)
	}
	if err := records.Write(filepath.Join(d.a.folder, searchIndexFile), data); err != nil {
		d.a.log.Warn("saving the search index failed; the next start builds it from git", "err", err)
		return err
	}
	return nil
}
