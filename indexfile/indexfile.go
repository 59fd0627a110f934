// Package indexfile is .git/index on disk, as memfsd reads and writes it:
// parsed through a cache trusted while the file's checksum and size are
// unchanged, written whole while it is small (or core.splitIndex is
// false), else split over a shared index, and the shared indexes freshened
// and expired as git does. The format itself is gitfmt/index; when to
// write and under which lock is the repository's.
package indexfile

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/internal/atomicfile"
)

// File is one repository's .git/index.
type File struct {
	gitDir string
	sync   bool // fsync what is written (a shared index)
	cache  cache
	// splitOff: core.splitIndex is false (read once, see Encode).
	splitOnce sync.Once
	splitOff  bool
	// written is the checksum and size of the index memfsd last renamed
	// in (Ours).
	writtenMu   sync.Mutex
	writtenSum  [index.TrailerSize]byte
	writtenSize int64
}

// New is the index of the repository whose .git is gitDir.
func New(gitDir string, sync bool) *File { return &File{gitDir: gitDir, sync: sync} }

// Read returns the index, from the cache when it is current. The caller
// owns the result and may change it. A split index whose shared index is
// lost is ErrSharedIndexLost; one that cannot be parsed, index.ErrFormat.
func (f *File) Read() (*index.Index, error) {
	ix, _, err := f.cache.read(f.gitDir)
	return ix, err
}

// ReadStamped is Read, with the stamp of the file that was read.
func (f *File) ReadStamped() (*index.Index, Stamp, error) { return f.cache.read(f.gitDir) }

// Stamp tells one .git/index from another: its inode, size, change time
// and trailing checksum. Git and memfsd replace the index by renaming a
// new file over it, so any write by anyone shows here (an inode number
// reused within the clock's tick keeps a different checksum). Missing: no
// index.
type Stamp struct {
	Ino     uint64
	Size    int64
	Ctime   int64 // nanoseconds
	Sum     [index.TrailerSize]byte
	Missing bool
}

// Stamp reads the current index's stamp: an open, an fstat and the
// trailing bytes, a few microseconds (it runs under index.lock).
func (f *File) Stamp() (Stamp, error) {
	fd, _, err := gitstore.OpenGitFile(f.gitDir, "index", gitstore.MaxIndexSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Stamp{Missing: true}, nil
	}
	if err != nil {
		return Stamp{}, fmt.Errorf("read index: %w", err)
	}
	defer fd.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fd.Fd()), &st); err != nil {
		return Stamp{}, fmt.Errorf("read index: %w", err)
	}
	s := stampOf(&st)
	if st.Size >= index.TrailerSize {
		if _, err := fd.ReadAt(s.Sum[:], st.Size-index.TrailerSize); err != nil {
			return Stamp{}, fmt.Errorf("read index: %w", err)
		}
	}
	return s, nil
}

// Same reports whether the index on disk is still the one stamped s, by
// one lstat (inode, size and change time; the checksum was compared when
// s was taken): what a window under index.lock can afford.
func (f *File) Same(s Stamp) bool {
	var st syscall.Stat_t
	err := syscall.Lstat(filepath.Join(f.gitDir, "index"), &st)
	if err != nil {
		return s.Missing && errors.Is(err, syscall.ENOENT)
	}
	c := stampOf(&st)
	return !s.Missing && c.Ino == s.Ino && c.Size == s.Size && c.Ctime == s.Ctime
}

// Adopt takes the index stamped s as memfsd's own (Ours).
func (f *File) Adopt(s Stamp) {
	f.writtenMu.Lock()
	defer f.writtenMu.Unlock()
	f.writtenSum, f.writtenSize = s.Sum, s.Size
}

// Ours reports whether the index stamped s is the one memfsd last wrote
// (not another process's).
func (f *File) Ours(s Stamp) bool {
	f.writtenMu.Lock()
	defer f.writtenMu.Unlock()
	return !s.Missing && s.Size == f.writtenSize && s.Sum == f.writtenSum && s.Sum != [index.TrailerSize]byte{}
}

func stampOf(st *syscall.Stat_t) Stamp {
	return Stamp{Ino: st.Ino, Size: st.Size, Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec}
}

// cache keeps .git/index parsed between writes, so a write does not
// read and parse every file's entry again (at 10,000 files that was a
// third of a commit's CPU). It is trusted only while the file on disk ends
// with the checksum of what was cached, at the same size: git and memfsd
// rewrite the index through index.lock and a rename, and the trailing
// SHA-1 covers every byte before it, so any change by anyone shows there.
// An index without a checksum (git's index.skipHash) is always read.
type cache struct {
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
func (c *cache) read(gitDir string) (*index.Index, Stamp, error) {
	f, _, err := gitstore.OpenGitFile(gitDir, "index", gitstore.MaxIndexSize)
	if errors.Is(err, fs.ErrNotExist) {
		c.forget()
		return &index.Index{Version: 2}, Stamp{Missing: true}, nil
	}
	if err != nil {
		return nil, Stamp{}, fmt.Errorf("read index: %w", err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, Stamp{}, fmt.Errorf("read index: %w", err)
	}
	stamp := stampOf(&st)
	mtime := st.Mtim.Sec
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries != nil && st.Size == c.size && st.Size >= index.HeaderLen+index.TrailerSize {
		var sum [index.TrailerSize]byte
		if _, err := f.ReadAt(sum[:], st.Size-index.TrailerSize); err == nil && sum == c.sum {
			stamp.Sum = sum
			return &index.Index{Version: c.version, Entries: slices.Clone(c.entries), Mtime: mtime, Base: c.base}, stamp, nil
		}
	}
	data := make([]byte, st.Size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, Stamp{}, fmt.Errorf("read index: %w", err)
	}
	if len(data) >= index.TrailerSize {
		copy(stamp.Sum[:], data[len(data)-index.TrailerSize:])
	}
	ix, link, err := index.Parse(data)
	if err == nil && link != nil {
		err = c.mergeShared(gitDir, ix, link)
	}
	if err != nil {
		c.entries = nil
		return nil, stamp, err
	}
	ix.Mtime = mtime
	c.keep(ix, data)
	ix.Entries = slices.Clone(ix.Entries)
	return ix, stamp, nil
}

// wrote records that data, the encoding of ix, is now the index on disk.
// ix must not change afterwards.
func (c *cache) wrote(ix *index.Index, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keep(ix, data)
}

func (c *cache) keep(ix *index.Index, data []byte) {
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
func (c *cache) mergeShared(gitDir string, ix *index.Index, link *index.Link) error {
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
func (c *cache) keepShared(s *index.Shared) {
	c.mu.Lock()
	c.shared = s
	c.mu.Unlock()
}

func (c *cache) forget() {
	c.mu.Lock()
	c.entries = nil
	c.mu.Unlock()
}

// A split index (git's core.splitIndex, Documentation/gitformat-index)
// keeps most entries in .git/sharedindex.<checksum>, written once, and
// .git/index holds only what changed since plus a "link" extension naming
// the shared file: two bitmaps of shared entries, deleted and replaced.
// A write then costs what changed, not the number of files: at 10,000
// files the whole index is ~700 KB to hash and write on every commit.
//
// memfsd reads split indexes (its own and git's) and writes one once the
// index holds SplitMinEntries entries, unless core.splitIndex is false. It
// starts a new shared index when the changes reach splitMaxPercent of it,
// as git does (splitIndex.maxPercentChange). The git CLI reads and keeps
// split indexes whatever its config; tools built on libgit2 or go-git do
// not understand them, which is why small repositories keep a whole index.

// SplitMinEntries: below this many entries the index is written whole
// (tests lower it).
var SplitMinEntries = 4096

const (
	splitMaxPercent = 20
	// sharedIndexExpiry: a shared index memfsd no longer links to is
	// removed once this old (git's own default is two weeks; a temporary
	// index of a person's git commit may still link to it for a while).
	sharedIndexExpiry = 24 * time.Hour
	sharedIndexPrefix = "sharedindex."
)

// Encode serialises ix for .git/index: whole while it is small (or
// core.splitIndex is false), else split over its shared index, a new one
// written first when the changes have grown past splitMaxPercent of it.
func (f *File) Encode(ix *index.Index) ([]byte, error) {
	if len(ix.Entries) < SplitMinEntries || !f.splitIndexAllowed() {
		ix.Base = nil
		return ix.Encode(), nil
	}
	if ix.Base != nil && f.sharedUsable(ix.Base) {
		data, changed := ix.EncodeSplit(ix.Base)
		if changed*100 <= len(ix.Base.Entries)*splitMaxPercent {
			return data, nil
		}
	}
	whole := ix.Encode()
	base := &index.Shared{Entries: slices.Clone(ix.Entries), Size: int64(len(whole))}
	copy(base.Name[:], whole[len(whole)-20:])
	path := filepath.Join(f.gitDir, sharedIndexPrefix+hex.EncodeToString(base.Name[:]))
	if fi, err := os.Stat(path); err != nil || fi.Size() != base.Size {
		// Durable before any index that links to it is renamed in (not
		// every index write is followed by a syncfs). Rare: a new shared
		// index starts past 20 % of changes.
		if err := atomicfile.Write(path, whole, 0o644, f.sync); err != nil {
			return nil, fmt.Errorf("write shared index: %w", err)
		}
		if f.sync {
			if err := gitstore.SyncDir(f.gitDir); err != nil {
				return nil, fmt.Errorf("write shared index: %w", err)
			}
		}
	} else {
		_ = os.Chtimes(path, time.Now(), time.Now()) // in use again
	}
	ix.Base, ix.NewShared = base, true
	f.cache.keepShared(base)
	data, _ := ix.EncodeSplit(base)
	return data, nil
}

// sharedUsable reports whether base's file is still there, whole, to link
// to (a person or a tool may have removed it; git itself removes shared
// indexes no index was written over for two weeks), and keeps it fresh as
// git does on every read and write (freshen_shared_index), at most hourly:
// git and memfsd remove only the shared indexes that have gone stale.
func (f *File) sharedUsable(base *index.Shared) bool {
	path := filepath.Join(f.gitDir, sharedIndexPrefix+hex.EncodeToString(base.Name[:]))
	fi, err := os.Stat(path)
	if err != nil || base.Size != 0 && fi.Size() != base.Size {
		return false
	}
	if time.Since(fi.ModTime()) > sharedIndexFreshen {
		_ = os.Chtimes(path, time.Now(), time.Now())
	}
	return true
}

// sharedIndexFreshen is how stale the linked shared index's time may get
// before memfsd touches it (far below sharedIndexExpiry).
const sharedIndexFreshen = time.Hour

// indexWritten records that data, the encoding of ix, is now .git/index,
// and once an index linking to a new shared index is in place, removes
// the shared indexes that have gone stale (never before: the index being
// replaced links to one).
func (f *File) Written(ix *index.Index, data []byte) {
	f.cache.wrote(ix, data)
	if len(data) >= index.TrailerSize {
		f.writtenMu.Lock()
		copy(f.writtenSum[:], data[len(data)-index.TrailerSize:])
		f.writtenSize = int64(len(data))
		f.writtenMu.Unlock()
	}
	if ix.NewShared && ix.Base != nil {
		removeOldSharedIndexes(f.gitDir, sharedIndexPrefix+hex.EncodeToString(ix.Base.Name[:]))
	}
}

// splitIndexAllowed is false when the repository's config says
// core.splitIndex = false. Read once per File.
func (f *File) splitIndexAllowed() bool {
	f.splitOnce.Do(func() {
		f.splitOff = false
		cfg, err := f.readConfig()
		if err != nil {
			return
		}
		v := strings.ToLower(cfg.Section("core").Option("splitIndex"))
		f.splitOff = v == "false" || v == "no" || v == "off" || v == "0"
	})
	return !f.splitOff
}

// removeOldSharedIndexes removes the shared indexes other than keep that
// are older than sharedIndexExpiry, as git's clean_shared_index_files.
func removeOldSharedIndexes(gitDir, keep string) {
	entries, err := os.ReadDir(gitDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), sharedIndexPrefix) || e.Name() == keep {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > sharedIndexExpiry {
			os.Remove(filepath.Join(gitDir, e.Name()))
		}
	}
}

// ErrSharedIndexLost: .git/index links to a shared index that is gone or
// damaged; git cannot read that index either.
var ErrSharedIndexLost = errors.New("the shared index it links to is gone or damaged")

// readSharedIndex reads and checks .git/sharedindex.<name>.
func readSharedIndex(gitDir string, name [20]byte) (*index.Shared, error) {
	path := filepath.Join(gitDir, sharedIndexPrefix+hex.EncodeToString(name[:]))
	data, err := gitstore.ReadGitFile(gitDir, filepath.Base(path), gitstore.MaxIndexSize)
	if err != nil {
		return nil, fmt.Errorf("read index: %w: %w", ErrSharedIndexLost, err)
	}
	if len(data) < index.TrailerSize || !bytes.Equal(data[len(data)-index.TrailerSize:], name[:]) {
		return nil, fmt.Errorf("read index: %w: %s does not match its name", ErrSharedIndexLost, filepath.Base(path))
	}
	ix, link, err := index.Parse(data)
	if err != nil {
		return nil, err
	}
	if link != nil {
		return nil, fmt.Errorf("read index: %w: a shared index links to another", index.ErrFormat)
	}
	return &index.Shared{Name: name, Entries: ix.Entries, Size: int64(len(data))}, nil
}

// readConfig reads .git/config through gitstore's reader (not go-git's
// storage, which would open a FIFO there and wait forever).
func (f *File) readConfig() (*gitconfig.Config, error) {
	data, err := gitstore.ReadGitFile(f.gitDir, "config", gitstore.MaxConfigSize)
	if err != nil {
		return nil, err
	}
	cfg := gitconfig.New()
	if err := gitconfig.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return nil, fmt.Errorf("read .git/config: %w", err)
	}
	return cfg, nil
}
