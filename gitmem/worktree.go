package gitmem

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// ErrBadPath is returned for a path that is not a plain relative path inside
// the work tree (absolute, "..", ".git", empty parts).
var ErrBadPath = errors.New("bad path")

// cleanPath checks a work-tree-relative slash path.
func cleanPath(p string) (string, error) {
	p = filepath.ToSlash(p)
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w %q: want a clean relative path", ErrBadPath, p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." || strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("%w %q: %q is not allowed", ErrBadPath, p, part)
		}
	}
	return p, nil
}

// fileState is a work-tree file read for a commit: its blob content, mode
// and the stat taken before reading (so a change after the read shows).
type fileState struct {
	data []byte
	mode filemode.FileMode
	st   *syscall.Stat_t
}

// statMatches reports whether the index entry's stat still describes the
// file, and the entry is not racy (written in the same second as the index).
func statMatches(e indexEntryInfo, st *syscall.Stat_t, indexMtime int64) bool {
	if st == nil {
		return false
	}
	return e.Size == uint32(st.Size) && e.Mtime == st.Mtim.Sec && e.MtNs == uint32(st.Mtim.Nsec) &&
		e.Ino == uint32(st.Ino) && e.Mtime < indexMtime && e.Size != 0
}

// blobHash is the id the content would have as a blob.
func blobHash(data []byte) plumbing.Hash { return hashObject(plumbing.BlobObject, data) }
