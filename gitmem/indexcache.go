package gitmem

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"syscall"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
)

// indexCache keeps .git/index parsed between writes, so a write does not
// read and parse every file's entry again (at 10,000 files that was a
// third of a commit's CPU). It is trusted only while the file on disk ends
// with the checksum of what was cached, at the same size: git and memfsd
// rewrite the index through index.lock and a rename, and the trailing
// SHA-1 covers every byte before it, so any change by anyone shows there.
// An index without a checksum (git's index.skipHash) is always read.
type indexCache struct {
	mu      sync.Mutex
	version uint32
	entries []index.Entry // never changed in place: readers get a copy
	base    *index.Shared // the shared index entries was read over, if split
	sum     [index.TrailerSize]byte
	size    int64
	// shared is the last shared index read or written (files named by
	// their checksum never change).
	shared *index.Shared
}

// read returns gitDir's index, from the cache when it is current. The
// caller owns the result and may change it.
func (c *indexCache) read(gitDir string) (*index.Index, error) {
	f, _, err := gitstore.OpenGitFile(gitDir, "index", gitstore.MaxIndexSize)
	if errors.Is(err, fs.ErrNotExist) {
		c.forget()
		return &index.Index{Version: 2}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	mtime := st.Mtim.Sec
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries != nil && st.Size == c.size && st.Size >= index.HeaderLen+index.TrailerSize {
		var sum [index.TrailerSize]byte
		if _, err := f.ReadAt(sum[:], st.Size-index.TrailerSize); err == nil && sum == c.sum {
			return &index.Index{Version: c.version, Entries: slices.Clone(c.entries), Mtime: mtime, Base: c.base}, nil
		}
	}
	data := make([]byte, st.Size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	ix, link, err := index.Parse(data)
	if err == nil && link != nil {
		err = c.mergeShared(gitDir, ix, link)
	}
	if err != nil {
		c.entries = nil
		return nil, err
	}
	ix.Mtime = mtime
	c.keep(ix, data)
	ix.Entries = slices.Clone(ix.Entries)
	return ix, nil
}

// wrote records that data, the encoding of ix, is now the index on disk.
// ix must not change afterwards.
func (c *indexCache) wrote(ix *index.Index, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep(ix, data)
}

func (c *indexCache) keep(ix *index.Index, data []byte) {
	c.entries = nil
	if len(data) < index.HeaderLen+index.TrailerSize {
		return
	}
	copy(c.sum[:], data[len(data)-index.TrailerSize:])
	if c.sum == ([index.TrailerSize]byte{}) {
		return // no checksum to recognise it by
	}
	c.version, c.entries, c.base, c.size = ix.Version, ix.Entries, ix.Base, int64(len(data))
	if c.entries == nil {
		c.entries = []index.Entry{}
	}
}

// mergeShared makes ix, read from a split index, whole: its shared index
// merged in (git's merge_base_index), and remembered as its base.
func (c *indexCache) mergeShared(gitDir string, ix *index.Index, link *index.Link) error {
	base := c.shared
	if base == nil || base.Name != link.Base {
		var err error
		if base, err = readSharedIndex(gitDir, link.Base); err != nil {
			return err
		}
		c.shared = base
	}
	entries, err := index.MergeSplit(base.Entries, ix.Entries, link)
	if err != nil {
		return err
	}
	ix.Entries, ix.Base = entries, base
	return nil
}

// keepShared remembers a shared index memfsd has just written.
func (c *indexCache) keepShared(s *index.Shared) {
	c.mu.Lock()
	c.shared = s
	c.mu.Unlock()
}

func (c *indexCache) forget() {
	c.mu.Lock()
	c.entries = nil
	c.mu.Unlock()
}

// readIndex reads .git/index, through the cache. An index memfsd cannot
// parse (damaged, cut short, a format it does not know) or whose shared
// index is lost is rebuilt from HEAD (and written whole or over a new
// shared index at the next write), with a warning: otherwise no commit
// could ever be made again. A sparse index is refused instead (rebuilt,
// the files outside its cone would look deleted).
func (r *Repo) readIndex() (*index.Index, error) {
	ix, err := r.ixc.read(r.GitDir)
	switch {
	case err == nil:
		return ix, nil
	case errors.Is(err, index.ErrSparse):
		return nil, err
	case errors.Is(err, errSharedIndexLost):
		r.log.Warn("the index links to a lost shared index; rebuilt from HEAD (staged changes in it are gone, the work tree is untouched)", "err", err)
		return r.indexFromHead()
	case errors.Is(err, index.ErrFormat):
		r.log.Warn("the index cannot be read; rebuilt from HEAD (staged changes in it are gone, the work tree is untouched)", "err", err)
		return r.indexFromHead()
	}
	return nil, err
}
