package agent

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/worktree"
)

// History limits: letta-code asks 50 commits by default; an agent's
// prompt is better served by fewer, and a call is bounded.
const (
	DefaultHistoryLimit = 20
	MaxHistoryLimit     = 200
)

// History is a path's history as the agent sees it, in the shape of
// letta-code's memory_history_response (file_path, commits of sha,
// message, timestamp, author_name), with what git log adds: the body
// (a letta-code tool call's reason), the author's email and the files
// each commit changed.
type History struct {
	FilePath string          `json:"file_path"`
	Limit    int             `json:"limit"`
	Commits  []HistoryCommit `json:"commits"`
}

// HistoryCommit is one commit of a History.
type HistoryCommit struct {
	SHA         string `json:"sha"`
	Message     string `json:"message"`   // the subject, git's %s
	Body        string `json:"body"`      // git's %b: a letta-code reason, trailers
	Timestamp   string `json:"timestamp"` // author date, strict ISO 8601 (git's %aI)
	AuthorName  string `json:"author_name"`
	AuthorEmail string `json:"author_email"`
	// Changes are the files under the path the commit changed against its
	// first parent; MoreChanges counts those left out past 100.
	Changes     []FileChange `json:"changes"`
	MoreChanges int          `json:"more_changes,omitempty"`
}

// FileChange is a file a commit changed: create, update or delete.
type FileChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// FileAtRef is a file's content at a revision, in the shape of
// letta-code's memory_file_at_ref_response (file_path, ref, content),
// with the commit the revision named and the encoding: utf8, or base64
// for content that is not UTF-8 text.
type FileAtRef struct {
	FilePath string `json:"file_path"`
	Ref      string `json:"ref"`
	SHA      string `json:"sha"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	Blob     string `json:"blob"`
	Mode     string `json:"mode"` // git's octal file mode, e.g. 100644
}

// Errors of History and FileAt that are the caller's, not memfsd's.
var (
	// ErrBadHistoryInput is a path, revision or limit refused as given.
	ErrBadHistoryInput = errors.New("bad input")
	// ErrNoFileAtRef is a path with no file at the revision.
	ErrNoFileAtRef = history.ErrNotInRevision
)

// History lists the commits that changed path ("" for all, a file or a
// folder), newest first, at most limit (0: DefaultHistoryLimit).
func (a *Agent) History(path string, limit int) (History, error) {
	repo := a.repository()
	if repo == nil {
		return History{}, ErrNotReady
	}
	if limit == 0 {
		limit = DefaultHistoryLimit
	}
	if limit < 1 || limit > MaxHistoryLimit {
		return History{}, fmt.Errorf("history: limit %d: want 1 to %d: %w", limit, MaxHistoryLimit, ErrBadHistoryInput)
	}
	cs, err := boundedRead(a, "history", func() ([]history.Commit, error) { return repo.History(memoriesRel(path), limit) })
	if err != nil {
		return History{}, historyErr(err)
	}
	h := History{FilePath: path, Limit: limit, Commits: make([]HistoryCommit, len(cs))}
	for i, c := range cs {
		hc := HistoryCommit{
			SHA: c.Hash.String(), Message: c.Subject, Body: c.Body,
			Timestamp:  c.When.Format(time.RFC3339),
			AuthorName: c.Author.Name, AuthorEmail: c.Author.Email,
			Changes: make([]FileChange, len(c.Changes)), MoreChanges: c.MoreChanges,
		}
		for k, ch := range c.Changes {
			hc.Changes[k] = FileChange{Path: ch.Path, Kind: ch.Kind}
		}
		h.Commits[i] = hc
	}
	return h, nil
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
	f, err := boundedRead(a, "file at "+rev, func() (history.File, error) { return repo.FileAt(memoriesRel(path), rev) })
	if err != nil {
		return FileAtRef{}, historyErr(err)
	}
	out := FileAtRef{FilePath: path, Ref: rev, SHA: f.Commit.String(), Blob: f.Blob.String(), Mode: f.Mode.String(), Encoding: "utf8"}
	if utf8.Valid(f.Data) {
		out.Content = string(f.Data)
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(f.Data), "base64"
	}
	return out, nil
}

// memoriesRel takes a path as the memory tool spells it (/memories/...)
// or relative to the memory folder, as letta-code does.
func memoriesRel(p string) string {
	if p == "/memories" {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, "/memories/"); ok {
		return rest
	}
	return p
}

// historyErr marks the caller's mistakes (a path memfsd never tracks, a
// revision misspelt, unknown or ambiguous) as ErrBadHistoryInput.
func historyErr(err error) error {
	var pe *worktree.PathError
	switch {
	case errors.As(err, &pe), errors.Is(err, history.ErrBadRevision), errors.Is(err, history.ErrUnknownRevision),
		errors.Is(err, history.ErrAmbiguousRevision):
		return fmt.Errorf("%w: %w", ErrBadHistoryInput, err)
	}
	return err
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
