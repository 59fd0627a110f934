package pack

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/gitfmt/codec"
)

// Index is memfsd's own `git index-pack`: it writes a pack to a file as
// the bytes arrive and indexes it in the same pass, as git clone does.
//
// Pass one runs at the network's pace: it reads each entry's header and
// inflates its data (the only way to find where a zlib stream ends),
// hashing the whole objects at once and keeping the deltas' instructions.
// Pass two resolves the deltas, one chain per base object, on every core;
// the entries' CRCs and the pack's own checksum are taken from the file
// meanwhile. go-git's parser does the same work on one core, with a cache
// in front of every object; this is three times faster on a memory-shaped
// pack (many small deltas), which is what makes a first clone beat
// `git clone`.
//
// Inflated data is kept in memory up to keepBudget; past it an object's
// data is inflated again from the file when pass two needs it, so a large
// pack costs time, not memory.

// keepBudget bounds the inflated bytes pass one keeps for pass two (a
// variable for the test that indexes with nothing kept).
var keepBudget int64 = 128 << 20

// Limits on what a pack may ask of memory, whatever its header says: a
// broken or hostile server must get an error, never crash the daemon that
// serves every agent.
const (
	// maxObjectSize is the largest object (or delta) memfsd accepts: far
	// above any memory file, far below what would exhaust the machine.
	maxObjectSize = 256 << 20
	// maxDeltaDepth is the longest delta chain (git's own maximum is 4095).
	maxDeltaDepth = 4096
	// maxChainBytes bounds the content one chain walk keeps alive at once
	// (each level's result is the base of the next).
	maxChainBytes = 1 << 30
)

// ErrBadPack marks a pack that is malformed (as opposed to one that could
// not be read or written).
var ErrBadPack = errors.New("malformed pack")

// packEntry is one object of the pack.
type packEntry struct {
	off, dataOff int64 // the entry's header; its zlib stream
	size         int64 // inflated size (of the delta, for a delta)
	baseOff      int64 // OFS_DELTA: the base's entry offset
	baseRef      int32 // REF_DELTA: index into refBases; -1 otherwise
	raw          plumbing.ObjectType
	typ          plumbing.ObjectType // resolved (the base's, for a delta)
	data         []byte              // inflated, when kept
	hash         plumbing.Hash
	crc          uint32
}

func (e *packEntry) isDelta() bool {
	return e.raw == plumbing.OFSDeltaObject || e.raw == plumbing.REFDeltaObject
}

// packIndexer holds what both passes share.
type packIndexer struct {
	background bool            // one delta worker, not one per CPU (a repack)
	ctx        context.Context // stops the resolution when cancelled
	entries    []packEntry
	claimed    []atomic.Bool // pass two: the worker that resolves each entry
	refBases   []plumbing.Hash
	kept       int64
	file       []byte // the pack, mapped, for pass two
	sum        plumbing.Hash

	zpool sync.Pool
}

// countingReader is the pack stream as pass one reads it: a ByteReader, so
// zlib reads exactly its own stream and no further, and the offset of the
// next byte.
type countingReader struct {
	br  *bufio.Reader
	off int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.off += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.off++
	}
	return b, err
}

// Index copies the pack from src to f, indexes it, and returns its
// index and checksum. f is left at the pack's end. Cancelling ctx stops the
// delta resolution (the reading stops when src is closed).
func Index(ctx context.Context, src io.Reader, f *os.File) (*idxfile.MemoryIndex, plumbing.Hash, error) {
	return IndexAt(ctx, src, f, false)
}

// IndexAt is Index, resolving deltas on one goroutine instead of one per
// CPU when background (a repack: work that must leave the agents' writes
// a CPU). It does not lower a thread's priority: a niced thread running Go
// code stalls every stop-the-world of the whole process while the host is
// busy (seconds per GC under load, measured), so background work is kept
// narrow instead.
func IndexAt(ctx context.Context, src io.Reader, f *os.File, background bool) (*idxfile.MemoryIndex, plumbing.Hash, error) {
	ix := &packIndexer{background: background, ctx: ctx}
	n, err := ix.scan(src, f)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	file, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("map the pack: %w", err)
	}
	defer unix.Munmap(file)
	ix.file = file
	if err := ix.resolve(); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	w := new(idxfile.Writer)
	_ = w.OnHeader(uint32(len(ix.entries)))
	for i := range ix.entries {
		e := &ix.entries[i]
		w.Add(e.hash, uint64(e.off), e.crc)
	}
	if err := w.OnFooter(ix.sum); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	idx, err := w.Index()
	return idx, ix.sum, err
}

// scan is pass one: it reads the whole pack from src, writing every byte
// to dst, and returns the pack's length.
func (ix *packIndexer) scan(src io.Reader, dst io.Writer) (int64, error) {
	in := &countingReader{br: bufio.NewReaderSize(io.TeeReader(src, dst), 64<<10)}
	var hdr [12]byte
	if _, err := io.ReadFull(in, hdr[:]); err != nil {
		return 0, fmt.Errorf("read pack header: %w", err)
	}
	if string(hdr[:4]) != "PACK" {
		return 0, fmt.Errorf("%w: no PACK signature", ErrBadPack)
	}
	if v := binary.BigEndian.Uint32(hdr[4:8]); v != 2 && v != 3 {
		return 0, fmt.Errorf("%w: version %d", ErrBadPack, v)
	}
	count := binary.BigEndian.Uint32(hdr[8:12])
	if count == 0 {
		return 0, packfile.ErrEmptyPackfile
	}
	// Grown as entries arrive: the header's count is the sender's claim.
	ix.entries = make([]packEntry, 0, min(count, 1<<16))
	var zr io.ReadCloser
	for i := 0; i < int(count); i++ {
		ix.entries = append(ix.entries, packEntry{})
		e := &ix.entries[i]
		if err := ix.readHeader(in, e, i); err != nil {
			return 0, err
		}
		var err error
		if zr == nil {
			zr, err = zlib.NewReader(in)
		} else {
			err = zr.(zlib.Resetter).Reset(in, nil)
		}
		if err != nil {
			return 0, fmt.Errorf("%w: object at %d: %v", ErrBadPack, e.off, err)
		}
		keep := ix.kept+e.size <= keepBudget
		data, err := Inflate(zr, e.size)
		if err != nil {
			return 0, fmt.Errorf("%w: object at %d: %v", ErrBadPack, e.off, err)
		}
		if !e.isDelta() {
			e.typ = e.raw
			e.hash = codec.Hash(e.typ, data)
		}
		if keep {
			e.data = data
			ix.kept += e.size
		}
	}
	var trailer plumbing.Hash
	if _, err := io.ReadFull(in, trailer[:]); err != nil {
		return 0, fmt.Errorf("read pack trailer: %w", err)
	}
	if extra, _ := io.Copy(io.Discard, in); extra > 0 {
		return 0, fmt.Errorf("%w: %d bytes after the trailer", ErrBadPack, extra)
	}
	ix.sum = trailer
	return in.off, nil
}

// readHeader reads entry i's type, size and delta base.
func (ix *packIndexer) readHeader(in *countingReader, e *packEntry, i int) error {
	e.off = in.off
	e.baseRef = -1
	b, err := in.ReadByte()
	if err != nil {
		return fmt.Errorf("read object %d: %w", i, err)
	}
	e.raw = plumbing.ObjectType((b >> 4) & 7)
	size := int64(b & 0x0f)
	for shift := 4; b&0x80 != 0; shift += 7 {
		if shift > 56 {
			return fmt.Errorf("%w: object size too large at %d", ErrBadPack, e.off)
		}
		if b, err = in.ReadByte(); err != nil {
			return fmt.Errorf("read object %d: %w", i, err)
		}
		size |= int64(b&0x7f) << shift
	}
	e.size = size
	if size > maxObjectSize {
		return fmt.Errorf("%w: the object at %d declares %d bytes, over the %d MiB limit for one object", ErrBadPack, e.off, size, maxObjectSize>>20)
	}
	switch e.raw {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		b, err := in.ReadByte()
		if err != nil {
			return fmt.Errorf("read object %d: %w", i, err)
		}
		rel := int64(b & 0x7f)
		for b&0x80 != 0 {
			if rel > 1<<50 {
				return fmt.Errorf("%w: delta offset too large at %d", ErrBadPack, e.off)
			}
			if b, err = in.ReadByte(); err != nil {
				return fmt.Errorf("read object %d: %w", i, err)
			}
			rel = ((rel + 1) << 7) | int64(b&0x7f)
		}
		if rel <= 0 || rel > e.off {
			return fmt.Errorf("%w: delta base offset out of range at %d", ErrBadPack, e.off)
		}
		e.baseOff = e.off - rel
	case plumbing.REFDeltaObject:
		var h plumbing.Hash
		if _, err := io.ReadFull(in, h[:]); err != nil {
			return fmt.Errorf("read object %d: %w", i, err)
		}
		e.baseRef = int32(len(ix.refBases))
		ix.refBases = append(ix.refBases, h)
	default:
		return fmt.Errorf("%w: object type %d at %d", ErrBadPack, e.raw, e.off)
	}
	e.dataOff = in.off
	return nil
}

// Inflate reads a zlib stream that must hold exactly size bytes, to its
// end (so its checksum is read and checked too). Memory grows with what
// actually inflates, not with the declared size.
func Inflate(zr io.Reader, size int64) ([]byte, error) {
	data := make([]byte, 0, min(size, 64<<10))
	buf := bytes.NewBuffer(data)
	if n, err := buf.ReadFrom(io.LimitReader(zr, size)); err != nil {
		return nil, err
	} else if n != size {
		return nil, fmt.Errorf("%d bytes inflated, %d declared", n, size)
	}
	data = buf.Bytes()
	var one [1]byte
	for {
		n, err := zr.Read(one[:])
		if n > 0 {
			return nil, fmt.Errorf("more data than the declared %d bytes", size)
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// resolve is pass two: every delta resolved and hashed, every entry's CRC
// taken, and the trailer checked.
func (ix *packIndexer) resolve() error {
	n := len(ix.entries)
	for i := 0; i < n; i++ {
		end := int64(len(ix.file)) - 20
		if i+1 < n {
			end = ix.entries[i+1].off
		}
		ix.entries[i].crc = crc32.ChecksumIEEE(ix.file[ix.entries[i].off:end])
	}
	if sha1.Sum(ix.file[:len(ix.file)-20]) != ix.sum {
		return fmt.Errorf("%w: checksum mismatch (a damaged download)", ErrBadPack)
	}

	// Children of every base: by offset, and by id for REF_DELTA.
	byOff := make(map[int64]int32, n)
	for i := range ix.entries {
		byOff[ix.entries[i].off] = int32(i)
	}
	ofsKids := make(map[int32][]int32)
	refKids := make(map[plumbing.Hash][]int32)
	var roots []int32
	for i := range ix.entries {
		e := &ix.entries[i]
		switch {
		case e.raw == plumbing.OFSDeltaObject:
			b, ok := byOff[e.baseOff]
			if !ok {
				return fmt.Errorf("%w: delta at %d names no object at %d", ErrBadPack, e.off, e.baseOff)
			}
			ofsKids[b] = append(ofsKids[b], int32(i))
		case e.raw == plumbing.REFDeltaObject:
			h := ix.refBases[e.baseRef]
			refKids[h] = append(refKids[h], int32(i))
		default:
			roots = append(roots, int32(i))
		}
	}
	kids := func(i int32) []int32 {
		k := ofsKids[i]
		if rk := refKids[ix.entries[i].hash]; len(rk) > 0 {
			k = append(k[:len(k):len(k)], rk...)
		}
		return k
	}

	// Each base's chain on one worker. An entry is resolved by the worker
	// that claims it first: a delta has one base, but a pack may hold an
	// object twice (both copies would reach its REF_DELTA children) or a
	// delta whose result is its own base's id (a loop): the claim makes
	// each entry resolved once, and a loop ends.
	ix.claimed = make([]atomic.Bool, n)
	work := make(chan int32)
	workers := runtime.GOMAXPROCS(0)
	if ix.background {
		workers = 1
	}
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < cap(errs); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var failed error
			for root := range work {
				if failed == nil {
					failed = ix.ctx.Err()
				}
				if failed != nil || len(kids(root)) == 0 {
					continue
				}
				data, err := ix.content(root)
				if err == nil {
					err = ix.resolveKids(root, data, kids, 1, int64(len(data)))
				}
				failed = err
			}
			errs <- failed
		}()
	}
	for _, root := range roots {
		work <- root
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	for i := range ix.entries {
		if ix.entries[i].typ == plumbing.InvalidObject {
			return fmt.Errorf("%w: the delta at %d has no base in the pack (a thin pack)", ErrBadPack, ix.entries[i].off)
		}
	}
	return nil
}

// resolveKids applies every delta on base (whose content is data), hashes
// the result and goes on down each chain; depth and live count the chain
// so far (levels, bytes kept alive).
func (ix *packIndexer) resolveKids(base int32, data []byte, kids func(int32) []int32, depth int, live int64) error {
	if depth > maxDeltaDepth || live > maxChainBytes {
		return fmt.Errorf("%w: a delta chain deeper than %d or holding over %d MiB, from the object at %d", ErrBadPack, maxDeltaDepth, maxChainBytes>>20, ix.entries[base].off)
	}
	for _, k := range kids(base) {
		if !ix.claimed[k].CompareAndSwap(false, true) {
			continue // resolved by another copy of its base, or a loop
		}
		e := &ix.entries[k]
		delta, err := ix.content(k)
		if err != nil {
			return err
		}
		if sz, _ := deltaTargetSize(delta); sz > maxObjectSize {
			return fmt.Errorf("%w: the delta at %d makes %d bytes, over the %d MiB limit for one object", ErrBadPack, e.off, sz, maxObjectSize>>20)
		}
		target, err := packfile.PatchDelta(data, delta)
		if err != nil {
			return fmt.Errorf("%w: delta at %d: %v", ErrBadPack, e.off, err)
		}
		e.typ = ix.entries[base].typ
		e.hash = codec.Hash(e.typ, target)
		e.data = nil // the delta is spent
		if err := ix.resolveKids(k, target, kids, depth+1, live+int64(len(target))); err != nil {
			return err
		}
	}
	return nil
}

// deltaTargetSize reads the result size from a delta's header (after the
// base size); ok false when the header is cut short.
func deltaTargetSize(delta []byte) (int64, bool) {
	i := 0
	var sizes [2]int64
	for n := range sizes {
		var shift uint
		for {
			if i >= len(delta) || shift > 56 {
				return 0, false
			}
			b := delta[i]
			i++
			sizes[n] |= int64(b&0x7f) << shift
			shift += 7
			if b&0x80 == 0 {
				break
			}
		}
	}
	return sizes[1], true
}

// content is entry i's inflated data: kept by pass one, or inflated again
// from the file.
func (ix *packIndexer) content(i int32) ([]byte, error) {
	e := &ix.entries[i]
	if e.data != nil || e.size == 0 {
		return e.data, nil
	}
	rd := &sliceByteReader{b: ix.file[e.dataOff:]}
	var zr io.ReadCloser
	if z, ok := ix.zpool.Get().(io.ReadCloser); ok {
		zr = z
		if err := zr.(zlib.Resetter).Reset(rd, nil); err != nil {
			return nil, fmt.Errorf("%w: object at %d: %v", ErrBadPack, e.off, err)
		}
	} else {
		var err error
		if zr, err = zlib.NewReader(rd); err != nil {
			return nil, fmt.Errorf("%w: object at %d: %v", ErrBadPack, e.off, err)
		}
	}
	defer ix.zpool.Put(zr)
	data, err := Inflate(zr, e.size)
	if err != nil {
		return nil, fmt.Errorf("%w: object at %d: %v", ErrBadPack, e.off, err)
	}
	return data, nil
}

// sliceByteReader reads a byte slice; a ByteReader, so zlib does not
// buffer past its stream.
type sliceByteReader struct{ b []byte }

func (s *sliceByteReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

func (s *sliceByteReader) ReadByte() (byte, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	b := s.b[0]
	s.b = s.b[1:]
	return b, nil
}
