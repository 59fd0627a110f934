package gitstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// A packed object is refused when its entry's header states more than the
// cap (objectReader), but a delta entry is small whatever it stands on:
// go-git applies a delta by reading its base whole (ApplyDelta), so a
// delta the agent's own git packed on a bomb base (a blob stating a GiB,
// `git repack -a -d` after committing it) was inflated up to the base's
// stated size. So each pack go-git may read is walked once, entry by entry
// through its index, before an object is read from it: every entry's
// header size, and for a delta (OFS or REF) the base and target sizes its
// data declares (only the first bytes of the delta are inflated), are
// judged against the cap, following each delta's chain to its base; what
// fails is refused by id before go-git reads it (packChecks.refused).

// maxIdxBytes bounds the pack index memfsd reads to walk a pack (some 9
// million objects).
const maxIdxBytes = 256 << 20

// maxDeltaDepth bounds a delta chain memfsd follows (git makes them 50
// deep at most); a longer chain, or one that loops, is refused.
const maxDeltaDepth = 4096

// packChecks are the packs of one .git walked so far and what they hold
// that memfsd refuses to read. Safe for concurrent use.
type packChecks struct {
	mu    sync.Mutex
	fresh bool                 // the pack folder was listed since go-git last re-read it
	packs map[string]packCheck // by name without ".pack"
}

type packCheck struct {
	key packKey
	bad map[plumbing.Hash]*ObjectTooLargeError
}

// packKey tells a pack file from another of the same name.
type packKey struct {
	ino, size int64
	mtime     int64
}

// stale makes the next refused list objects/pack again (go-git re-reads it).
func (c *packChecks) stale() {
	c.mu.Lock()
	c.fresh = false
	c.mu.Unlock()
}

// refused is the error for reading the packed object h, nil when it may
// be read: every pack in gitDir's objects/pack not walked yet is walked
// first. note, when not nil, records a refusal for the agent's status.
func (c *packChecks) refused(gitDir string, h plumbing.Hash, note *Refusals) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fresh {
		c.refresh(gitDir)
	}
	for name, p := range c.packs {
		if e := p.bad[h]; e != nil {
			note.Note("objects/pack/"+name+".pack", e.Error())
			return e
		}
	}
	return nil
}

// refresh walks the packs of objects/pack it has not walked (or that
// changed), and forgets those gone.
func (c *packChecks) refresh(gitDir string) {
	entries, err := ReadDirBeneath(gitDir, "objects/pack")
	if err != nil {
		return // no packs to read: go-git finds none either
	}
	seen := map[string]bool{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !e.Mode().IsRegular() {
			continue
		}
		seen[name] = true
		key := packKey{size: e.Size(), mtime: e.ModTime().UnixNano(), ino: int64(Inode(e))}
		if p, ok := c.packs[name]; ok && p.key == key {
			continue
		}
		bad, err := walkPack(gitDir, name, MaxObjectSize())
		if err != nil {
			continue // unreadable (no index yet, or refused): go-git cannot read it either
		}
		if c.packs == nil {
			c.packs = map[string]packCheck{}
		}
		c.packs[name] = packCheck{key: key, bad: bad}
	}
	for name := range c.packs {
		if !seen[name] {
			delete(c.packs, name)
		}
	}
	c.fresh = true
}

// packEntry is what walkPack learns of one entry.
type packEntry struct {
	hash     plumbing.Hash
	size     int64 // the header's: the object's, or the delta data's
	base     int64 // a delta's base entry in this pack (-1: none, or not in this pack)
	baseID   plumbing.Hash
	baseSize int64 // a delta's declared base and target sizes
	target   int64
}

// walkPack walks the pack name (without ".pack") of gitDir, both files
// opened beneath the .git through no link, and returns the objects in it
// memfsd will not read, each with its error.
func walkPack(gitDir, name string, max int64) (map[plumbing.Hash]*ObjectTooLargeError, error) {
	rel := "objects/pack/" + name
	data, err := ReadFileBeneath(gitDir, rel+".idx", maxIdxBytes)
	if err != nil {
		return nil, err
	}
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil {
		return nil, fmt.Errorf("read %s.idx: %w", rel, err)
	}
	fd, err := openBeneath(gitDir, rel+".pack")
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel+".pack")
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s.pack: %w", rel, ErrNotRegular)
	}
	iter, err := idx.Entries()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	entries := map[int64]*packEntry{}
	var zr io.ReadCloser
	for {
		e, err := iter.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		pe, _ := readEntry(f, fi.Size(), int64(e.Offset), idx, &zr)
		if pe == nil {
			// A broken header: go-git fails on it by itself; nothing to weigh.
			continue
		}
		// A delta whose first bytes do not parse is still weighed by its
		// header's size and its base (go-git reads its data to that size).
		pe.hash = e.Hash
		entries[int64(e.Offset)] = pe
	}
	if zr != nil {
		zr.Close()
	}
	bad := map[plumbing.Hash]*ObjectTooLargeError{}
	verdict := map[int64]*ObjectTooLargeError{}
	for off, pe := range entries {
		if e := judge(entries, verdict, off, max); e != nil {
			bad[pe.hash] = e
		}
	}
	return bad, nil
}

// judge is the error for reading the entry at off (nil: fine), following
// its delta chain; verdict remembers the entries judged.
func judge(entries map[int64]*packEntry, verdict map[int64]*ObjectTooLargeError, off int64, max int64) *ObjectTooLargeError {
	// The chain from off down to the first entry judged already, or not a
	// delta in this pack.
	var chain []int64
	on := map[int64]bool{}
	var below *ObjectTooLargeError
	for cur := off; ; {
		if e, ok := verdict[cur]; ok {
			below = e
			break
		}
		pe := entries[cur]
		if pe == nil {
			break
		}
		if on[cur] || len(chain) >= maxDeltaDepth {
			below = &ObjectTooLargeError{Object: pe.hash.String(), Max: max, Why: fmt.Sprintf("its delta chain loops or runs past %d deltas", maxDeltaDepth)}
			break
		}
		on[cur] = true
		chain = append(chain, cur)
		if pe.base < 0 {
			break
		}
		cur = pe.base
	}
	// From the base up: an entry is refused for its own sizes, or for a
	// base refused.
	for i := len(chain) - 1; i >= 0; i-- {
		pe := entries[chain[i]]
		e := ownSizes(pe, max)
		if e == nil && below != nil {
			e = &ObjectTooLargeError{Object: pe.hash.String(), Declared: below.Declared, Max: max,
				Why: fmt.Sprintf("it is a delta on %s: %s", below.Object, below.what())}
		}
		verdict[chain[i]] = e
		below = e
	}
	return verdict[off]
}

// ownSizes is the error for an entry's own sizes over max.
func ownSizes(pe *packEntry, max int64) *ObjectTooLargeError {
	id := pe.hash.String()
	switch {
	case pe.size > max:
		return &ObjectTooLargeError{Object: id, Declared: pe.size, Max: max}
	case pe.baseSize > max:
		return &ObjectTooLargeError{Object: id, Declared: pe.baseSize, Max: max, Why: fmt.Sprintf("it is a delta on %s, which it states is %d bytes, the cap is %d", pe.baseID, pe.baseSize, max)}
	case pe.target > max:
		return &ObjectTooLargeError{Object: id, Declared: pe.target, Max: max, Why: fmt.Sprintf("its delta states %d bytes, the cap is %d", pe.target, max)}
	}
	return nil
}

// readEntry reads the header of the pack entry at off and, for a delta,
// the base and target sizes at the start of its data: only those first
// bytes are inflated.
func readEntry(f *os.File, packSize, off int64, idx *idxfile.MemoryIndex, zr *io.ReadCloser) (*packEntry, error) {
	var hdr [64]byte
	n, err := f.ReadAt(hdr[:], off)
	if n == 0 && err != nil {
		return nil, err
	}
	b := hdr[:n]
	i := 0
	next := func() (byte, bool) {
		if i >= len(b) {
			return 0, false
		}
		i++
		return b[i-1], true
	}
	c, ok := next()
	if !ok {
		return nil, io.ErrUnexpectedEOF
	}
	typ := plumbing.ObjectType((c >> 4) & 7)
	size := int64(c & 15)
	for shift := uint(4); c&0x80 != 0; shift += 7 {
		if c, ok = next(); !ok || shift > 56 {
			return nil, fmt.Errorf("pack entry at %d: bad header", off)
		}
		size |= int64(c&0x7f) << shift
	}
	pe := &packEntry{size: size, base: -1}
	switch typ {
	case plumbing.OFSDeltaObject:
		c, ok := next()
		if !ok {
			return nil, io.ErrUnexpectedEOF
		}
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if c, ok = next(); !ok || rel > 1<<55 {
				return nil, fmt.Errorf("pack entry at %d: bad delta offset", off)
			}
			rel = (rel+1)<<7 | int64(c&0x7f)
		}
		if rel <= 0 || rel > off {
			return nil, fmt.Errorf("pack entry at %d: delta base out of the pack", off)
		}
		pe.base = off - rel
		if h, err := idx.FindHash(pe.base); err == nil {
			pe.baseID = h
		}
	case plumbing.REFDeltaObject:
		if len(b)-i < 20 {
			return nil, io.ErrUnexpectedEOF
		}
		var h plumbing.Hash
		copy(h[:], b[i:i+20])
		i += 20
		pe.baseID = h
		if o, err := idx.FindOffset(h); err == nil {
			pe.base = o
		}
	default:
		return pe, nil
	}
	// The delta's first bytes: its base size and target size.
	// Through a small buffer: flate would wrap a plain reader in one of
	// 4 KiB, made anew for each entry and read full from the pack.
	sr := bufio.NewReaderSize(io.NewSectionReader(f, off+int64(i), packSize-off-int64(i)), 64)
	if *zr == nil {
		if *zr, err = zlib.NewReader(sr); err != nil {
			*zr = nil
			return pe, err
		}
	} else if err := (*zr).(zlib.Resetter).Reset(sr, nil); err != nil {
		return pe, err
	}
	var head [20]byte
	m, _ := io.ReadFull(*zr, head[:]) // a short delta is judged by what there is
	d := head[:m]
	var sizes [2]int64
	for k := range sizes {
		var v int64
		for shift := uint(0); ; shift += 7 {
			if len(d) == 0 || shift > 56 {
				return pe, fmt.Errorf("pack entry at %d: bad delta header", off)
			}
			c := d[0]
			d = d[1:]
			v |= int64(c&0x7f) << shift
			if c&0x80 == 0 {
				break
			}
		}
		sizes[k] = v
	}
	pe.baseSize, pe.target = sizes[0], sizes[1]
	return pe, nil
}
