package agent

import (
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/memhistory"
)

// History limits (package memhistory).
const (
	DefaultHistoryLimit = memhistory.DefaultLimit
	MaxHistoryLimit     = memhistory.MaxLimit
)

// History is a path's history as the agent sees it (memhistory.History).
type History = memhistory.History

// HistoryCommit is one commit of a History.
type HistoryCommit = memhistory.Commit

// FileChange is a file a commit changed: create, update or delete.
type FileChange = memhistory.FileChange

// FileAtRef is a file's content at a revision (memhistory.FileAtRef).
type FileAtRef = memhistory.FileAtRef

// Errors of History and FileAt that are the caller's, not memfsd's.
var (
	// ErrBadHistoryInput is a path, revision or limit refused as given.
	ErrBadHistoryInput = memhistory.ErrBadInput
	// ErrNoFileAtRef is a path with no file at the revision.
	ErrNoFileAtRef = memhistory.ErrNoFileAtRef
)

// History lists the commits that changed path ("" for all, a file or a
// folder), newest first, at most limit (0: DefaultHistoryLimit).
func (a *Agent) History(path string, limit int) (History, error) {
	repo := a.repository()
	if repo == nil {
		return History{}, ErrNotReady
	}
	limit, err := memhistory.Limit(limit)
	if err != nil {
		return History{}, err
	}
	cs, err := boundedRead(a, "history", func() ([]history.Commit, error) { return repo.History(memhistory.MemoriesRel(path), limit) })
	if err != nil {
		return History{}, memhistory.Err(err)
	}
	return memhistory.FromCommits(path, limit, cs), nil
}

// FileAt reads path at revision rev ("" is HEAD): a commit id (full or at
// least 4 digits), HEAD~N, a branch or a ref memfsd keeps.
func (a *Agent) FileAt(path, rev string) (FileAtRef, error) {
	repo := a.repository()
	if repo == nil {
		return FileAtRef{}, ErrNotReady
	}
	if rev == "" {
		rev = "HEAD"
	}
	f, err := boundedRead(a, "file at "+rev, func() (history.File, error) { return repo.FileAt(memhistory.MemoriesRel(path), rev) })
	if err != nil {
		return FileAtRef{}, memhistory.Err(err)
	}
	return memhistory.FromFile(path, rev, f), nil
}

// ReadHistory is History from disk, with no daemon.
func ReadHistory(cfg *Config, id, path string, limit int) (History, error) {
	var h History
	err := withDiskRepo(cfg, id, func(a *Agent) (err error) {
		h, err = a.History(path, limit)
		return err
	})
	return h, err
}

// ReadFileAt is FileAt from disk, with no daemon.
func ReadFileAt(cfg *Config, id, path, rev string) (FileAtRef, error) {
	var f FileAtRef
	err := withDiskRepo(cfg, id, func(a *Agent) (err error) {
		f, err = a.FileAt(path, rev)
		return err
	})
	return f, err
}

// withDiskRepo runs fn on the agent with its repository opened from disk.
func withDiskRepo(cfg *Config, id string, fn func(*Agent) error) error {
	a, err := New(cfg, id)
	if err != nil {
		return err
	}
	repo, err := gitmem.Open(a.Dir(), gitmem.Remote{URL: cfg.RemoteURL(id)}, gitmem.Options{Logger: cfg.Logger})
	if err != nil {
		return err
	}
	defer repo.Close()
	a.repo = repo
	return fn(a)
}
