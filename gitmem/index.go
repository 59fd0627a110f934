package gitmem

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

const (
	indexHeaderLen   = 12
	indexEntryFixed  = 62
	flagExtended     = 0x4000
	flagStageMask    = 0x3000
	flagNameMask     = 0x0fff
	indexTrailerSize = 20
)

// rawIndex is a parsed view of .git/index that keeps entries as byte slices.
type rawIndex struct {
	version uint32
	entries []rawEntry
	mtime   int64 // seconds; racy-git reference point (0: no index)
	// base is the shared index the entries were read over (a split
	// index), which the next write is split over too; nil when whole.
	base *sharedIndex
	// dirty: an entry was added, removed or changed since the read.
	dirty bool
	// newShared: encoding it wrote a new shared index (base).
	newShared bool
}

type rawEntry struct {
	path  string
	stage int
	data  []byte // the whole on-disk entry, padding included
}

// indexEntryInfo is what the index records about a file.
type indexEntryInfo struct {
	Hash  plumbing.Hash
	Mode  filemode.FileMode
	Size  uint32
	Mtime int64 // seconds
	MtNs  uint32
	Ino   uint32
}

var errIndexFormat = errors.New("unsupported index format")

// errSparseIndex: a sparse index (index.sparse) holds folders outside the
// sparse cone as single entries; rebuilt from HEAD it would list every
// file, and those not checked out would look deleted.
var errSparseIndex = errors.New("a sparse index (index.sparse=true) is not supported; run `git sparse-checkout disable` in the memory folder")

// parseRawIndex parses an index file's bytes; link is its split-index
// extension (nil for a whole index), whose shared entries the caller
// merges in.
func parseRawIndex(data []byte) (ix *rawIndex, link *indexLink, err error) {
	if len(data) < indexHeaderLen+indexTrailerSize || string(data[:4]) != "DIRC" {
		return nil, nil, fmt.Errorf("read index: %w: bad header", errIndexFormat)
	}
	ix = &rawIndex{version: binary.BigEndian.Uint32(data[4:8])}
	if ix.version < 2 || ix.version > 4 {
		return nil, nil, fmt.Errorf("read index: %w: version %d (git writes 2 to 4)", errIndexFormat, ix.version)
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	ix.entries = make([]rawEntry, 0, n+1)
	off := indexHeaderLen
	end := len(data) - indexTrailerSize
	prev := ""
	for i := 0; i < n; i++ {
		if off+indexEntryFixed > end {
			return nil, nil, fmt.Errorf("read index: %w: truncated entry %d", errIndexFormat, i)
		}
		flags := binary.BigEndian.Uint16(data[off+60 : off+62])
		fixed := indexEntryFixed
		if flags&flagExtended != 0 {
			fixed += 2
		}
		if ix.version == 4 {
			e, size, err := parseEntryV4(data[off:end], fixed, prev)
			if err != nil {
				return nil, nil, fmt.Errorf("read index: %w: entry %d: %w", errIndexFormat, i, err)
			}
			ix.entries = append(ix.entries, e)
			prev = e.path
			off += size
			continue
		}
		nameLen := int(flags & flagNameMask)
		if nameLen == flagNameMask {
			nul := bytes.IndexByte(data[off+fixed:end], 0)
			if nul < 0 {
				return nil, nil, fmt.Errorf("read index: %w: unterminated path", errIndexFormat)
			}
			nameLen = nul
		}
		size := (fixed + nameLen + 8) &^ 7
		if off+size > end {
			return nil, nil, fmt.Errorf("read index: %w: truncated entry %d", errIndexFormat, i)
		}
		ix.entries = append(ix.entries, rawEntry{
			path:  string(data[off+fixed : off+fixed+nameLen]),
			stage: int(flags&flagStageMask) >> 12,
			data:  data[off : off+size],
		})
		off += size
	}
	// Extensions follow: a split index's "link" is read; a sparse index
	// ("sdir") cannot be patched; the rest git rebuilds.
	for off+8 <= end {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4 : off+8]))
		if size > end-off-8 {
			return nil, nil, fmt.Errorf("read index: %w: truncated %q extension", errIndexFormat, sig)
		}
		switch sig {
		case "sdir":
			return nil, nil, fmt.Errorf("read index: %w", errSparseIndex)
		case "link":
			if link, err = parseIndexLink(data[off+8 : off+8+size]); err != nil {
				return nil, nil, err
			}
		}
		off += 8 + size
	}
	if ix.version == 4 {
		// Entries are kept in the padded form of versions 2 and 3 (the
		// form every other step patches and copies), so the index is
		// written back as 2 or 3: git reads either whatever index.version
		// says, and rewrites it as 4 at its own next write.
		ix.version = 2
	}
	return ix, link, nil
}

// parseEntryV4 reads one entry of an index version 4 from the start of d
// (fixed: the length of its stat part and flags), whose name is
// compressed against the previous entry's, prev: a varint says how many
// bytes to strip from the end of prev, then the rest of the name follows,
// NUL-terminated, with no padding. It returns the entry in the padded form
// of version 2/3, and how many bytes of d it took.
func parseEntryV4(d []byte, fixed int, prev string) (rawEntry, int, error) {
	if len(d) < fixed {
		return rawEntry{}, 0, errors.New("truncated")
	}
	strip, n, ok := decodeVarint(d[fixed:])
	if !ok {
		return rawEntry{}, 0, errors.New("bad path prefix length")
	}
	if strip > uint64(len(prev)) {
		return rawEntry{}, 0, fmt.Errorf("strips %d bytes of a %d-byte path", strip, len(prev))
	}
	rest := d[fixed+n:]
	nul := bytes.IndexByte(rest, 0)
	if nul < 0 {
		return rawEntry{}, 0, errors.New("unterminated path")
	}
	path := prev[:len(prev)-int(strip)] + string(rest[:nul])
	flags := binary.BigEndian.Uint16(d[60:62])
	return rawEntry{
		path:  path,
		stage: int(flags&flagStageMask) >> 12,
		data:  entryWithName(d[:fixed], path),
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
func (ix *rawIndex) find(path string) (int, bool) {
	i, _ := slices.BinarySearchFunc(ix.entries, path, func(e rawEntry, p string) int {
		return strings.Compare(e.path, p)
	})
	return i, i < len(ix.entries) && ix.entries[i].path == path
}

// lookup returns what the index records for path at stage 0.
func (ix *rawIndex) lookup(path string) (indexEntryInfo, bool) {
	i, ok := ix.find(path)
	if !ok || ix.entries[i].stage != 0 {
		return indexEntryInfo{}, false
	}
	return ix.entries[i].info(), true
}

func (e rawEntry) info() indexEntryInfo {
	d := e.data
	var h plumbing.Hash
	copy(h[:], d[40:60])
	return indexEntryInfo{
		Hash:  h,
		Mode:  filemode.FileMode(binary.BigEndian.Uint32(d[24:28])),
		Size:  binary.BigEndian.Uint32(d[36:40]),
		Mtime: int64(binary.BigEndian.Uint32(d[8:12])),
		MtNs:  binary.BigEndian.Uint32(d[12:16]),
		Ino:   binary.BigEndian.Uint32(d[20:24]),
	}
}

// remove drops every entry of path (all stages) and everything below path/.
func (ix *rawIndex) remove(path string) {
	i, _ := ix.find(path)
	j := i
	for j < len(ix.entries) && (ix.entries[j].path == path || strings.HasPrefix(ix.entries[j].path, path+"/")) {
		j++
	}
	// Entries below path/ sort after path but may be separated from it by
	// names like "path.md" ('.' < '/'): sweep them separately.
	ix.entries = slices.Delete(ix.entries, i, j)
	k, _ := ix.find(path + "/")
	m := k
	for m < len(ix.entries) && strings.HasPrefix(ix.entries[m].path, path+"/") {
		m++
	}
	ix.entries = slices.Delete(ix.entries, k, m)
	if j > i || m > k {
		ix.dirty = true
	}
}

// set records path at stage 0 with the given object and stat, replacing
// conflict stages, anything below path/ and a file at any parent folder.
func (ix *rawIndex) set(path string, h plumbing.Hash, mode filemode.FileMode, st *syscall.Stat_t) {
	data := encodeIndexEntry(path, h, mode, st)
	if i, ok := ix.find(path); ok && ix.entries[i].stage == 0 && bytes.Equal(ix.entries[i].data, data) &&
		(i+1 == len(ix.entries) || ix.entries[i+1].path != path) {
		return // recorded as it is (a file entry has nothing below path/)
	}
	ix.dirty = true
	ix.remove(path)
	for dir := parentDir(path); dir != ""; dir = parentDir(dir) {
		if i, ok := ix.find(dir); ok {
			ix.entries = slices.Delete(ix.entries, i, i+1)
		}
	}
	e := rawEntry{path: path, data: data}
	i, _ := ix.find(path)
	ix.entries = slices.Insert(ix.entries, i, e)
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

func encodeIndexEntry(path string, h plumbing.Hash, mode filemode.FileMode, st *syscall.Stat_t) []byte {
	size := (indexEntryFixed + len(path) + 8) &^ 7
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

// smudgeRacy zeroes the recorded size of entries written in or after the
// second the old index was written (other than the paths just set): their
// content may have changed without a visible stat change, and once the new
// index has a newer mtime git would trust the stale stat. A zero size makes
// git compare the content again.
func (ix *rawIndex) smudgeRacy(skip map[string]bool) {
	if ix.mtime == 0 {
		return
	}
	for i := range ix.entries {
		e := &ix.entries[i]
		if skip[e.path] || len(e.data) < indexEntryFixed {
			continue
		}
		mt := int64(binary.BigEndian.Uint32(e.data[8:12]))
		if mt >= ix.mtime && binary.BigEndian.Uint32(e.data[36:40]) != 0 {
			d := slices.Clone(e.data)
			binary.BigEndian.PutUint32(d[36:40], 0)
			e.data = d
			ix.dirty = true
		}
	}
}

// versionFor is the index version to write an entry under: an entry with
// extended flags (skip-worktree, intent-to-add) needs version 3, which git
// refuses to read as 2.
func versionFor(version uint32, e rawEntry) uint32 {
	if version < 3 && len(e.data) >= indexEntryFixed && binary.BigEndian.Uint16(e.data[60:62])&flagExtended != 0 {
		return 3
	}
	return version
}

// encode serialises the index as version 2 or 3 (as read; 2 for an index
// read as 4, 3 when an entry needs it), no extensions.
func (ix *rawIndex) encode() []byte {
	n := indexHeaderLen + indexTrailerSize
	version := ix.version
	for _, e := range ix.entries {
		n += len(e.data)
		version = versionFor(version, e)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, "DIRC"...)
	buf = binary.BigEndian.AppendUint32(buf, version)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(ix.entries)))
	for _, e := range ix.entries {
		buf = append(buf, e.data...)
	}
	sum := sha1.Sum(buf)
	return append(buf, sum[:]...)
}
