// Package index is git's index file (.git/index, Documentation/gitformat-index)
// as bytes: versions 2 to 4 read, 2 or 3 written, and the split index (a
// "link" extension over a shared index, two EWAH bitmaps) read and
// written. It only parses and encodes: which file is read, when a shared
// index is written or removed, and the locks around .git/index belong to
// the repository (package gitmem).
package index

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// The index is patched in its raw bytes: decoding and re-encoding every
// entry costs ~1 µs per file each way, while copying the untouched entries
// as they are and re-hashing the file costs a fraction of that. Extensions
// (TREE, UNTR, EOIE, ...) are dropped: git rebuilds the ones it wants.

// Sizes of the on-disk format: the header, an entry's fixed part, and the
// trailing checksum (a file holds at least HeaderLen+TrailerSize bytes).
const (
	HeaderLen     = 12
	entryFixedLen = 62
	flagExtended  = 0x4000
	flagStageMask = 0x3000
	flagNameMask  = 0x0fff
	TrailerSize   = 20
)

// Index is a parsed view of .git/index that keeps entries as byte slices.
type Index struct {
	Version uint32
	Entries []Entry
	Mtime   int64 // seconds; racy-git reference point (0: no index)
	// base is the shared index the entries were read over (a split
	// index), which the next write is split over too; nil when whole.
	Base *Shared
	// dirty: an entry was added, removed or changed since the read.
	Dirty bool
	// newShared: encoding it wrote a new shared index (base).
	NewShared bool
}

// Entry is one entry of the index, kept as its on-disk bytes.
type Entry struct {
	Path  string
	Stage int
	Data  []byte // the whole on-disk entry, padding included
}

// EntryInfo is what the index records about a file.
type EntryInfo struct {
	Hash  plumbing.Hash
	Mode  filemode.FileMode
	Size  uint32
	Mtime int64 // seconds
	MtNs  uint32
	Ino   uint32
}

// ErrFormat: the bytes are not an index this package reads.
var ErrFormat = errors.New("unsupported index format")

// ErrSparse: a sparse index (index.sparse) holds folders outside the
// sparse cone as single entries; rebuilt from HEAD it would list every
// file, and those not checked out would look deleted.
var ErrSparse = errors.New("a sparse index (index.sparse=true) is not supported; run `git sparse-checkout disable` in the memory folder")

// Parse parses an index file's bytes; link is its split-index
// extension (nil for a whole index), whose shared entries the caller
// merges in.
func Parse(data []byte) (ix *Index, link *Link, err error) {
	if len(data) < HeaderLen+TrailerSize || string(data[:4]) != "DIRC" {
		return nil, nil, fmt.Errorf("read index: %w: bad header", ErrFormat)
	}
	ix = &Index{Version: binary.BigEndian.Uint32(data[4:8])}
	if ix.Version < 2 || ix.Version > 4 {
		return nil, nil, fmt.Errorf("read index: %w: version %d (git writes 2 to 4)", ErrFormat, ix.Version)
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	// Every entry takes at least its fixed part: a count the file cannot
	// hold is refused before anything is allocated for it (the agent's
	// shell can write the index; a flipped count once asked for a slice
	// of four billion entries).
	if most := (len(data) - HeaderLen - TrailerSize) / entryFixedLen; n > most {
		return nil, nil, fmt.Errorf("read index: %w: %d entries claimed, %d bytes hold at most %d", ErrFormat, n, len(data), most)
	}
	ix.Entries = make([]Entry, 0, n+1)
	off := HeaderLen
	end := len(data) - TrailerSize
	prev := ""
	for i := 0; i < n; i++ {
		if off+entryFixedLen > end {
			return nil, nil, fmt.Errorf("read index: %w: truncated entry %d", ErrFormat, i)
		}
		flags := binary.BigEndian.Uint16(data[off+60 : off+62])
		fixed := entryFixedLen
		if flags&flagExtended != 0 {
			fixed += 2
		}
		if ix.Version == 4 {
			e, size, err := parseEntryV4(data[off:end], fixed, prev)
			if err != nil {
				return nil, nil, fmt.Errorf("read index: %w: entry %d: %w", ErrFormat, i, err)
			}
			ix.Entries = append(ix.Entries, e)
			prev = e.Path
			off += size
			continue
		}
		nameLen := int(flags & flagNameMask)
		if nameLen == flagNameMask {
			nul := bytes.IndexByte(data[off+fixed:end], 0)
			if nul < 0 {
				return nil, nil, fmt.Errorf("read index: %w: unterminated path", ErrFormat)
			}
			nameLen = nul
		}
		size := (fixed + nameLen + 8) &^ 7
		if off+size > end {
			return nil, nil, fmt.Errorf("read index: %w: truncated entry %d", ErrFormat, i)
		}
		ix.Entries = append(ix.Entries, Entry{
			Path:  string(data[off+fixed : off+fixed+nameLen]),
			Stage: int(flags&flagStageMask) >> 12,
			Data:  data[off : off+size],
		})
		off += size
	}
	// Extensions follow: a split index's "link" is read; a sparse index
	// ("sdir") cannot be patched; the rest git rebuilds.
	for off+8 <= end {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		if size > end-off-8 {
			return nil, nil, fmt.Errorf("read index: %w: truncated %q extension", ErrFormat, sig)
		}
		switch sig {
		case "sdir":
			return nil, nil, fmt.Errorf("read index: %w", ErrSparse)
		case "link":
			if link, err = parseIndexLink(data[off+8 : off+8+size]); err != nil {
				return nil, nil, err
			}
		}
		off += 8 + size
	}
	if ix.Version == 4 {
		// Entries are kept in the padded form of versions 2 and 3 (the
		// form every other step patches and copies), so the index is
		// written back as 2 or 3: git reads either whatever index.version
		// says, and rewrites it as 4 at its own next write.
		ix.Version = 2
	}
	return ix, link, nil
}

// parseEntryV4 reads one entry of an index version 4 from the start of d
// (fixed: the length of its stat part and flags), whose name is
// compressed against the previous entry's, prev: a varint says how many
// bytes to strip from the end of prev, then the rest of the name follows,
// NUL-terminated, with no padding. It returns the entry in the padded form
// of version 2/3, and how many bytes of d it took.
func parseEntryV4(d []byte, fixed int, prev string) (Entry, int, error) {
	if len(d) < fixed {
		return Entry{}, 0, errors.New("truncated")
	}
	strip, n, ok := decodeVarint(d[fixed:])
	if !ok {
		return Entry{}, 0, errors.New("bad path prefix length")
	}
	if strip > uint64(len(prev)) {
		return Entry{}, 0, fmt.Errorf("strips %d bytes of a %d-byte path", strip, len(prev))
	}
	rest := d[fixed+n:]
	nul := bytes.IndexByte(rest, 0)
	if nul < 0 {
		return Entry{}, 0, errors.New("unterminated path")
	}
	path := prev[:len(prev)-int(strip)] + string(rest[:nul])
	flags := binary.BigEndian.Uint16(d[60:62])
	return Entry{
		Path:  path,
		Stage: int(flags&flagStageMask) >> 12,
		Data:  entryWithName(d[:fixed], path),
	}, fixed + n + nul + 1, nil
}

// decodeVarint reads git's varint (varint.c: 7 bits a byte, most
// significant first, each continuation adding one), and how many bytes
// it took; ok is false when it is cut short or overflows.
func decodeVarint(d []byte) (v uint64, n int, ok bool) {
	if len(d) == 0 {
		return 0, 0, false
	}
	c := d[0]
	v, n = uint64(c&0x7f), 1
	for c&0x80 != 0 {
		v++
		if v == 0 || v>>57 != 0 || n == len(d) {
			return 0, 0, false
		}
		c = d[n]
		n++
		v = v<<7 | uint64(c&0x7f)
	}
	return v, n, true
}

// find returns the position of path's first entry, and whether it exists.
func (ix *Index) find(path string) (int, bool) {
	i, _ := slices.BinarySearchFunc(ix.Entries, path, func(e Entry, p string) int {
		return strings.Compare(e.Path, p)
	})
	return i, i < len(ix.Entries) && ix.Entries[i].Path == path
}

// Lookup returns what the index records for path at stage 0.
func (ix *Index) Lookup(path string) (EntryInfo, bool) {
	i, ok := ix.find(path)
	if !ok || ix.Entries[i].Stage != 0 {
		return EntryInfo{}, false
	}
	return ix.Entries[i].Info(), true
}

// EntriesOf returns path's entries, every stage (none: not in the index).
// They share their bytes with ix.
func (ix *Index) EntriesOf(path string) []Entry {
	i, _ := ix.find(path)
	j := i
	for j < len(ix.Entries) && ix.Entries[j].Path == path {
		j++
	}
	return ix.Entries[i:j]
}

// Take makes path's entries in ix those of from: Set's effect (anything
// below path/ and a file at a parent folder dropped) when from has path at
// stage 0, else RemoveFile's. It carries a change made on one reading of
// an index over to a newer one another process wrote meanwhile.
func (ix *Index) Take(from *Index, path string) {
	es := from.EntriesOf(path)
	if len(es) != 1 || es[0].Stage != 0 {
		ix.RemoveFile(path)
		for _, e := range es {
			i, _ := ix.find(path)
			for i < len(ix.Entries) && ix.Entries[i].Path == path && ix.Entries[i].Stage < e.Stage {
				i++
			}
			ix.Entries = slices.Insert(ix.Entries, i, e)
			ix.Dirty = true
		}
		return
	}
	ix.Dirty = true
	ix.Remove(path)
	for dir := parentDir(path); dir != ""; dir = parentDir(dir) {
		if i, ok := ix.find(dir); ok {
			ix.Entries = slices.Delete(ix.Entries, i, i+1)
		}
	}
	i, _ := ix.find(path)
	ix.Entries = slices.Insert(ix.Entries, i, es[0])
}

// Info decodes what the entry records about its file.
func (e Entry) Info() EntryInfo {
	d := e.Data
	var h plumbing.Hash
	copy(h[:], d[40:60])
	return EntryInfo{
		Hash:  h,
		Mode:  filemode.FileMode(binary.BigEndian.Uint32(d[24:28])),
		Size:  binary.BigEndian.Uint32(d[36:40]),
		Mtime: int64(binary.BigEndian.Uint32(d[8:12])),
		MtNs:  binary.BigEndian.Uint32(d[12:16]),
		Ino:   binary.BigEndian.Uint32(d[20:24]),
	}
}

// RemoveFile drops the entries of path (all stages) and nothing below
// path/: a path that names a folder of tracked files keeps them.
func (ix *Index) RemoveFile(path string) {
	i, _ := ix.find(path)
	j := i
	for j < len(ix.Entries) && ix.Entries[j].Path == path {
		j++
	}
	if j > i {
		ix.Entries = slices.Delete(ix.Entries, i, j)
		ix.Dirty = true
	}
}

// Remove drops every entry of path (all stages) and everything below path/.
func (ix *Index) Remove(path string) {
	i, _ := ix.find(path)
	j := i
	for j < len(ix.Entries) && (ix.Entries[j].Path == path || strings.HasPrefix(ix.Entries[j].Path, path+"/")) {
		j++
	}
	// Entries below path/ sort after path but may be separated from it by
	// names like "path.md" ('.' < '/'): sweep them separately.
	ix.Entries = slices.Delete(ix.Entries, i, j)
	k, _ := ix.find(path + "/")
	m := k
	for m < len(ix.Entries) && strings.HasPrefix(ix.Entries[m].Path, path+"/") {
		m++
	}
	ix.Entries = slices.Delete(ix.Entries, k, m)
	if j > i || m > k {
		ix.Dirty = true
	}
}

// Set records path at stage 0 with the given object and stat, replacing
// conflict stages, anything below path/ and a file at any parent folder.
func (ix *Index) Set(path string, h plumbing.Hash, mode filemode.FileMode, st *syscall.Stat_t) {
	data := encodeIndexEntry(path, h, mode, st)
	if i, ok := ix.find(path); ok && ix.Entries[i].Stage == 0 && bytes.Equal(ix.Entries[i].Data, data) &&
		(i+1 == len(ix.Entries) || ix.Entries[i+1].Path != path) {
		return // recorded as it is (a file entry has nothing below path/)
	}
	ix.Dirty = true
	ix.Remove(path)
	for dir := parentDir(path); dir != ""; dir = parentDir(dir) {
		if i, ok := ix.find(dir); ok {
			ix.Entries = slices.Delete(ix.Entries, i, i+1)
		}
	}
	e := Entry{Path: path, Data: data}
	i, _ := ix.find(path)
	ix.Entries = slices.Insert(ix.Entries, i, e)
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

func encodeIndexEntry(path string, h plumbing.Hash, mode filemode.FileMode, st *syscall.Stat_t) []byte {
	size := (entryFixedLen + len(path) + 8) &^ 7
	d := make([]byte, size)
	be := binary.BigEndian
	if st != nil {
		be.PutUint32(d[0:], uint32(st.Ctim.Sec))
		be.PutUint32(d[4:], uint32(st.Ctim.Nsec))
		be.PutUint32(d[8:], uint32(st.Mtim.Sec))
		be.PutUint32(d[12:], uint32(st.Mtim.Nsec))
		be.PutUint32(d[16:], uint32(st.Dev))
		be.PutUint32(d[20:], uint32(st.Ino))
		be.PutUint32(d[28:], st.Uid)
		be.PutUint32(d[32:], st.Gid)
		be.PutUint32(d[36:], uint32(st.Size))
	}
	be.PutUint32(d[24:], uint32(mode))
	copy(d[40:60], h[:])
	n := len(path)
	if n > flagNameMask {
		n = flagNameMask
	}
	be.PutUint16(d[60:], uint16(n))
	copy(d[62:], path)
	return d
}

// SmudgeRacy zeroes the recorded size of entries written in or after the
// second the old index was written (other than the paths just set): their
// content may have changed without a visible stat change, and once the new
// index has a newer mtime git would trust the stale stat. A zero size makes
// git compare the content again.
func (ix *Index) SmudgeRacy(skip map[string]bool) {
	if ix.Mtime == 0 {
		return
	}
	for i := range ix.Entries {
		e := &ix.Entries[i]
		if skip[e.Path] || len(e.Data) < entryFixedLen {
			continue
		}
		mt := int64(binary.BigEndian.Uint32(e.Data[8:12]))
		if mt >= ix.Mtime && binary.BigEndian.Uint32(e.Data[36:40]) != 0 {
			d := slices.Clone(e.Data)
			binary.BigEndian.PutUint32(d[36:40], 0)
			e.Data = d
			ix.Dirty = true
		}
	}
}

// versionFor is the index version to write an entry under: an entry with
// extended flags (skip-worktree, intent-to-add) needs version 3, which git
// refuses to read as 2.
func versionFor(version uint32, e Entry) uint32 {
	if version < 3 && len(e.Data) >= entryFixedLen && binary.BigEndian.Uint16(e.Data[60:62])&flagExtended != 0 {
		return 3
	}
	return version
}

// Encode serialises the index as version 2 or 3 (as read; 2 for an index
// read as 4, 3 when an entry needs it), no extensions.
func (ix *Index) Encode() []byte {
	n := HeaderLen + TrailerSize
	version := ix.Version
	for _, e := range ix.Entries {
		n += len(e.Data)
		version = versionFor(version, e)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, "DIRC"...)
	buf = binary.BigEndian.AppendUint32(buf, version)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(ix.Entries)))
	for _, e := range ix.Entries {
		buf = append(buf, e.Data...)
	}
	sum := sha1.Sum(buf)
	return append(buf, sum[:]...)
}
