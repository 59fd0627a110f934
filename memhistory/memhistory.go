// Package memhistory is the memory's past as the agent is answered it: a
// path's commits in the shape of letta-code's memory_history_response and
// a file at a revision in that of memory_file_at_ref_response, the limits
// of a call, paths spelt as the memory tool spells them, and which errors
// are the caller's. The repository (package history, through gitmem)
// reads; this package shapes the answer. It sits below package agent,
// which keeps History, FileAt and their types by the names it had.
package memhistory

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memfsd/memfsd/history"
	"github.com/memfsd/memfsd/worktree"
)

// History limits: letta-code asks 50 commits by default; an agent's
// prompt is better served by fewer, and a call is bounded.
const (
	DefaultLimit = 20
	MaxLimit     = 200
)

// History is a path's history as the agent sees it, in the shape of
// letta-code's memory_history_response (file_path, commits of sha,
// message, timestamp, author_name), with what git log adds: the body
// (a letta-code tool call's reason), the author's email and the files
// each commit changed.
type History struct {
	FilePath string   `json:"file_path"`
	Limit    int      `json:"limit"`
	Commits  []Commit `json:"commits"`
}

// Commit is one commit of a History.
type Commit struct {
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

// Errors of a history call that are the caller's, not memfsd's.
var (
	// ErrBadInput is a path, revision or limit refused as given.
	ErrBadInput = errors.New("bad input")
	// ErrNoFileAtRef is a path with no file at the revision.
	ErrNoFileAtRef = history.ErrNotInRevision
)

// Limit checks a call's limit: 0 is DefaultLimit, else 1 to MaxLimit.
func Limit(limit int) (int, error) {
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return limit, fmt.Errorf("history: limit %d: want 1 to %d: %w", limit, MaxLimit, ErrBadInput)
	}
	return limit, nil
}

// FromCommits is the repository's commits of path as the agent sees them.
func FromCommits(path string, limit int, cs []history.Commit) History {
	h := History{FilePath: path, Limit: limit, Commits: make([]Commit, len(cs))}
	for i, c := range cs {
		hc := Commit{
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
	return h
}

// FromFile is the repository's file at rev as the agent sees it: its
// content as text when it is UTF-8, else in base64.
func FromFile(path, rev string, f history.File) FileAtRef {
	out := FileAtRef{FilePath: path, Ref: rev, SHA: f.Commit.String(), Blob: f.Blob.String(), Mode: f.Mode.String(), Encoding: "utf8"}
	if utf8.Valid(f.Data) {
		out.Content = string(f.Data)
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(f.Data), "base64"
	}
	return out
}

// MemoriesRel takes a path as the memory tool spells it (/memories/...)
// or relative to the memory folder, as letta-code does.
func MemoriesRel(p string) string {
	if p == "/memories" {
		return ""
	}
	if rest, ok := strings.CutPrefix(p, "/memories/"); ok {
		return rest
	}
	return p
}

// Err marks the caller's mistakes (a path memfsd never tracks, a
// revision misspelt, unknown or ambiguous) as ErrBadInput.
func Err(err error) error {
	var pe *worktree.PathError
	switch {
	case errors.As(err, &pe), errors.Is(err, history.ErrBadRevision), errors.Is(err, history.ErrUnknownRevision),
		errors.Is(err, history.ErrAmbiguousRevision):
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return err
}
