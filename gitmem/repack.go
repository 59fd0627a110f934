package gitmem

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// DefaultRepackLoose is how many loose objects make a repack worth it.
const DefaultRepackLoose = 512

// gcPIDMaxAge is how long git honours another gc's gc.pid (git: 12 hours).
const gcPIDMaxAge = 12 * time.Hour

// ErrGCRunning: a git gc (or another repack) holds .git/gc.pid.
var ErrGCRunning = errors.New("a git gc is running (gc.pid)")

// RepackResult says what Repack did.
type RepackResult struct {
	Packed int    // loose objects moved into the new pack
	Pack   string // the new pack's name (empty when none was made)
}

// Repack moves the loose objects into one new pack, as `git repack -d` of
// loose objects does, so the object folder stays small over a long life.
// It never holds the write lock while it reads and packs (loose objects
// never change once written); only Reindex and the removal of the now
// packed loose files take it, briefly. It honours git's gc.pid both ways:
// a running `git gc` makes it skip (ErrGCRunning), and while it runs a
// person's `git gc` waits. A crash at any point leaves every object loose,
// packed, or both: the pack and its index are synced and renamed into
// place (pack first, index last) before any loose file goes.
func (r *Repo) Repack(minLoose int) (RepackResult, error) {
	var res RepackResult
	release, err := r.takeGCPID()
	if err != nil {
		return res, err
	}
	defer release()
	objDir := filepath.Join(r.GitDir, "objects")
	loose, err := listLoose(objDir)
	if err != nil || len(loose) < max(minLoose, 1) {
		return res, err
	}
	packPath, idxPath, sum, err := writePack(objDir, loose, r.objs.sync)
	if err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	name := "pack-" + hex.EncodeToString(sum)
	final := filepath.Join(objDir, "pack", name)
	if err := os.Rename(packPath, final+".pack"); err != nil {
		os.Remove(packPath)
		os.Remove(idxPath)
		return res, fmt.Errorf("repack: %w", err)
	}
	if err := os.Rename(idxPath, final+".idx"); err != nil {
		os.Remove(idxPath)
		return res, fmt.Errorf("repack: %w", err)
	}
	if r.objs.sync {
		if err := syncDir(filepath.Join(objDir, "pack")); err != nil {
			return res, fmt.Errorf("repack: %w", err)
		}
	}
	// Only now, and only for objects the new pack holds, the loose copies go.
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.ObjectStorage.Reindex()
	for _, h := range loose {
		if r.st.HasEncodedObject(h) != nil {
			continue // not readable from the pack: keep the loose copy
		}
		if err := os.Remove(r.objs.loosePath(h)); err == nil {
			res.Packed++
		}
	}
	res.Pack = name
	r.log.Info("repacked loose objects", "objects", res.Packed, "pack", name)
	return res, nil
}

// takeGCPID creates .git/gc.pid as git gc does ("<pid> <host>"), or fails
// with ErrGCRunning when a fresh one is there.
func (r *Repo) takeGCPID() (func(), error) {
	p := filepath.Join(r.GitDir, "gc.pid")
	host, _ := os.Hostname()
	for attempt := 0; attempt < 2; attempt++ {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d %s", os.Getpid(), host)
			f.Close()
			return func() { os.Remove(p) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("repack: %w", err)
		}
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) < gcPIDMaxAge {
			return nil, ErrGCRunning
		}
		os.Remove(p) // older than git itself would honour
	}
	return nil, ErrGCRunning
}

// listLoose lists the loose objects, sorted.
func listLoose(objDir string) ([]plumbing.Hash, error) {
	dirs, err := os.ReadDir(objDir)
	if err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		files, err := os.ReadDir(filepath.Join(objDir, d.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			if len(f.Name()) != 38 {
				continue
			}
			if h, ok := parseHex(d.Name() + f.Name()); ok {
				out = append(out, h)
			}
		}
	}
	slices.SortFunc(out, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	return out, nil
}

func parseHex(s string) (plumbing.Hash, bool) {
	var h plumbing.Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, false
	}
	copy(h[:], b)
	return h, true
}

// readLoose inflates a loose object: its type and content.
func readLoose(path string) (plumbing.ObjectType, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return 0, nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return 0, nil, err
	}
	header, data, ok := bytes.Cut(raw, []byte{0})
	typ, size, ok2 := strings.Cut(string(header), " ")
	n, err := strconv.Atoi(size)
	if !ok || !ok2 || err != nil || n != len(data) {
		return 0, nil, fmt.Errorf("object %s: bad header", path)
	}
	t, err := plumbing.ParseObjectType(typ)
	return t, data, err
}

// writePack writes the objects (whole, no deltas) as a version 2 pack and
// its version 2 index under temporary names in objects/pack, synced when
// sync, and returns their paths and the pack's checksum.
func writePack(objDir string, hashes []plumbing.Hash, sync bool) (string, string, []byte, error) {
	packDir := filepath.Join(objDir, "pack")
	pf, err := os.CreateTemp(packDir, "tmp_pack_")
	if err != nil {
		return "", "", nil, err
	}
	fail := func(err error) (string, string, []byte, error) {
		pf.Close()
		os.Remove(pf.Name())
		return "", "", nil, err
	}
	sum := sha1.New()
	w := io.MultiWriter(pf, sum)
	var head [12]byte
	copy(head[:], "PACK")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], uint32(len(hashes)))
	if _, err := w.Write(head[:]); err != nil {
		return fail(err)
	}
	offsets := make([]uint32, len(hashes))
	crcs := make([]uint32, len(hashes))
	off := uint64(len(head))
	var entry bytes.Buffer
	for i, h := range hashes {
		t, data, err := readLoose(filepath.Join(objDir, h.String()[:2], h.String()[2:]))
		if err != nil {
			return fail(err)
		}
		if hashObject(t, data) != h {
			return fail(fmt.Errorf("object %s: content does not match its name", h))
		}
		entry.Reset()
		size := uint64(len(data))
		b := byte(t)<<4 | byte(size&0x0f)
		size >>= 4
		for size > 0 {
			entry.WriteByte(b | 0x80)
			b = byte(size & 0x7f)
			size >>= 7
		}
		entry.WriteByte(b)
		zw := zlib.NewWriter(&entry)
		zw.Write(data)
		zw.Close()
		if off > 0x7fffffff {
			return fail(errors.New("pack over 2 GiB"))
		}
		offsets[i], crcs[i] = uint32(off), crc32.ChecksumIEEE(entry.Bytes())
		if _, err := w.Write(entry.Bytes()); err != nil {
			return fail(err)
		}
		off += uint64(entry.Len())
	}
	packSum := sum.Sum(nil)
	if _, err := pf.Write(packSum); err != nil {
		return fail(err)
	}
	if sync {
		if err := pf.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := pf.Close(); err != nil {
		os.Remove(pf.Name())
		return "", "", nil, err
	}

	// The index: fanout, names, CRCs, offsets, pack checksum, own checksum.
	var idx bytes.Buffer
	idx.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	var fan [256]uint32
	for _, h := range hashes {
		for b := int(h[0]); b < 256; b++ {
			fan[b]++
		}
	}
	for _, n := range fan {
		binary.Write(&idx, binary.BigEndian, n)
	}
	for _, h := range hashes {
		idx.Write(h[:])
	}
	for _, c := range crcs {
		binary.Write(&idx, binary.BigEndian, c)
	}
	for _, o := range offsets {
		binary.Write(&idx, binary.BigEndian, o)
	}
	idx.Write(packSum)
	idxSum := sha1.Sum(idx.Bytes())
	idx.Write(idxSum[:])
	xf, err := os.CreateTemp(packDir, "tmp_idx_")
	if err != nil {
		os.Remove(pf.Name())
		return "", "", nil, err
	}
	_, err = xf.Write(idx.Bytes())
	if err == nil && sync {
		err = xf.Sync()
	}
	if cerr := xf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(pf.Name())
		os.Remove(xf.Name())
		return "", "", nil, err
	}
	return pf.Name(), xf.Name(), packSum, nil
}
