// Package rejected keeps the bytes of writes a guard undid (read-only
// blocks, denied view writes) under .git/memfsd/rejected/ in a work tree,
// named <unix-nanos>-<path with / as %>, the newest kept, and lists them.
package rejected

import (
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memfsd/memfsd/worktree"
)

// Rel is where rejected bytes are kept, relative to the memory
// folder: inside its .git, which the agent's shell reaches too, so every
// step there goes through the folder's descriptor (withTree), never by
// name: a link the agent puts at .git/memfsd or at the folder is removed,
// never followed.
const Rel = ".git/memfsd/rejected"

// realDirsIn makes each of rels (outermost first) a real folder beneath wt:
// a symbolic link or a file standing there (the agent's doing) is removed
// (the link itself, not what it points to) first.
func realDirsIn(wt *worktree.Dir, rels ...string) error {
	for _, rel := range rels {
		st, err := wt.Lstat(rel)
		if err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			continue
		}
		if err == nil {
			if err := wt.Remove(rel); err != nil {
				return err
			}
		}
		if err := wt.MkdirAll(rel); err != nil {
			return err
		}
	}
	return nil
}

// Keep stores bytes a guard took out of the work tree wt at rel and
// prunes the folder to the newest keep files.
func Keep(wt *worktree.Dir, rel string, data []byte, keep int) error {
	if err := realDirsIn(wt, ".git/memfsd", Rel); err != nil {
		return err
	}
	name := strconv.FormatInt(uniqueNanos(), 10) + "-" + strings.ReplaceAll(rel, "/", "%")
	if _, err := wt.WriteFile(Rel+"/"+name, data, worktree.Regular, false); err != nil {
		return err
	}
	return prune(wt, keep)
}

var lastNanos atomic.Int64

// uniqueNanos is the time in nanoseconds, strictly increasing in this
// process, so two rejections never share a name.
func uniqueNanos() int64 {
	for {
		now, last := time.Now().UnixNano(), lastNanos.Load()
		if now <= last {
			now = last + 1
		}
		if lastNanos.CompareAndSwap(last, now) {
			return now
		}
	}
}

// prune removes all but the newest keep rejected files.
func prune(wt *worktree.Dir, keep int) error {
	names := Names(wt)
	for len(names) > keep {
		if err := wt.Remove(Rel + "/" + names[0].File); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		names = names[1:]
	}
	return nil
}

// Name is one rejected file: its name in the folder, when it was kept
// (Unix nanoseconds) and the memory path it was written at.
type Name struct {
	File string
	At   int64
	Path string
}

// Names lists the rejected files, oldest first (none when the
// folder is missing or not a real folder).
func Names(wt *worktree.Dir) []Name {
	entries, _ := wt.ReadDir(Rel)
	var out []Name
	for _, e := range entries {
		at, rest, ok := strings.Cut(e.Name, "-")
		n, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || e.Stat.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		out = append(out, Name{File: e.Name, At: n, Path: strings.ReplaceAll(rest, "%", "/")})
	}
	slices.SortFunc(out, func(x, y Name) int { return int(x.At - y.At) })
	return out
}
