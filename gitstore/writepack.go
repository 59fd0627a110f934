package gitstore

import (
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/memfsd/memfsd/gitfmt/pack"
)

// One write, one small pack. The objects of a write (a blob, its folders'
// trees, a commit) are kept in memory until the flush that precedes the
// ref's move, then written as one pack and its index: two new files and
// two renames instead of one file and one rename per object in as many
// fanout folders, which made the flush's syncfs write that many folders
// (measured: five loose objects and a syncfs 1.1-1.2 ms, a pack, its index
// and a syncfs 0.37-0.41 ms). The packs hold whole objects (no deltas);
// the background repack rolls them up with deltas, geometrically, before
// git's own gc.autoPackLimit (50) would make a person's `git commit` start
// a full `git gc`.
//
// A pack's objects are not yet reachable from a ref when it lands, and `git
// repack -a -d` drops unreachable packed objects: so each pack comes with a
// .keep file (written before its index, git's signal that the pack
// exists), which git's repack and gc honour, removed when the r.mu section
// that wrote it ends, its refs moved (Repo.unlock). A crash leaves the
// .keep; the next Open removes it (ClearWriteKeeps).
//
// go-git learns of a new pack only by re-reading every pack index (3-7 ms
// at 51k objects), so the store reads its own recent packs itself (recent)
// until something makes go-git look again anyway.

// recentObject locates an object in a pack this store wrote.
type recentObject struct {
	pack string // the .pack file
	off  int64
	t    plumbing.ObjectType
	size int64
}

// writeKeep is the content of a write's .keep file, which tells it from
// one a person or git made.
const writeKeep = "memfsd: until the ref that needs it moves\n"

// WritePacksDue is how many packs of writes make a repack worth it,
// whatever their size: well under git's gc.autoPackLimit of 50.
const WritePacksDue = 32

// stage keeps an object for the next flush's pack. The caller does not
// change data afterwards.
func (s *Objects) stage(h plumbing.Hash, t plumbing.ObjectType, data []byte) {
	if s.pendingAt == nil {
		s.pendingAt = map[plumbing.Hash]int{}
	}
	s.pendingAt[h] = len(s.pending)
	s.pending = append(s.pending, pack.Object{Hash: h, Type: t, Data: data})
	s.remember(h)
	s.LooseSince.Add(1)
}

// forgetPending drops the pending objects from memory and from every cache
// that says they exist: they never reached the disk.
func (s *Objects) forgetPending() {
	for _, p := range s.pending {
		delete(s.present, p.Hash)
		s.forgetTree(p.Hash)
		delete(s.commitTrees, p.Hash)
		delete(s.commits, p.Hash)
	}
	s.dropPending()
}

func (s *Objects) dropPending() {
	clear(s.pending) // let the data go
	s.pending = s.pending[:0]
	clear(s.pendingAt)
}

// writePending writes the pending objects as one pack and its index into
// objects/pack (pack first, index last: git sees a pack by its index).
// Not synced: the caller's syncfs hardens both before a ref may point
// into them.
func (s *Objects) writePending() error {
	if len(s.pending) == 0 {
		return nil
	}
	pack, idx, offsets := pack.Encode(s.pending)
	packDir := filepath.Join(s.Dir, "pack")
	base := filepath.Join(packDir, "pack-"+plumbing.Hash(pack[len(pack)-20:]).String())
	packPlaced := false
	for _, f := range []struct {
		ext  string
		data []byte
	}{{".keep", []byte(writeKeep)}, {".pack", pack}, {".idx", idx}} {
		placed, err := s.placeFile(base+f.ext, f.data)
		if err != nil {
			if f.ext == ".idx" && packPlaced {
				_ = os.Remove(base + ".pack") // a pack without its index is dead weight
			}
			return fmt.Errorf("write pack of %d objects: %w", len(s.pending), err)
		}
		switch {
		case placed && f.ext == ".keep":
			s.kept = append(s.kept, base+".keep")
		case placed && f.ext == ".pack":
			packPlaced = true
		}
	}
	s.addOwnPack(base + ".pack")
	if s.recent == nil {
		s.recent = map[plumbing.Hash]recentObject{}
	}
	for i, p := range s.pending {
		s.recent[p.Hash] = recentObject{pack: base + ".pack", off: offsets[i], t: p.Type, size: int64(len(p.Data))}
	}
	s.WritePacks.Add(1)
	return nil
}

// ReleaseKept removes the .keep files of the packs written so far.
func (s *Objects) ReleaseKept() {
	for _, k := range s.kept {
		_ = os.Remove(k)
	}
	s.kept = s.kept[:0]
}

// ClearWriteKeeps removes the .keep files of writes that a crash left
// (their refs moved or never will): with them, neither git nor memfsd
// would ever roll those packs up.
func ClearWriteKeeps(gitDir string) {
	dir := filepath.Join(gitDir, "objects", "pack")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".keep") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if data, err := ReadGitFile(gitDir, "objects/pack/"+e.Name(), MaxRefSize); err == nil && string(data) == writeKeep {
			_ = os.Remove(p)
		}
	}
}

// placeFile writes data into a spare file, read-only, renamed to path;
// placed is false when a file was at path already (packs are named by
// their content, so it is the same).
func (s *Objects) placeFile(path string, data []byte) (placed bool, err error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	f, tmp, err := s.Spares.take()
	if err != nil {
		return false, err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o444)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
		if errors.Is(err, fs.ErrNotExist) { // no objects/pack yet (an empty repo)
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = os.Rename(tmp, path)
			}
		}
	}
	if err != nil {
		_ = os.Remove(tmp)
		return false, err
	}
	return true, nil
}

// ownObject returns an object of the write in progress or of a pack this
// store wrote, without go-git. ok is false when it is neither (or its pack
// went, to a person's `git gc`: go-git finds it where it went).
func (s *Objects) ownObject(h plumbing.Hash) (t plumbing.ObjectType, data []byte, ok bool) {
	if i, found := s.pendingAt[h]; found {
		p := s.pending[i]
		return p.Type, p.Data, true
	}
	loc, found := s.recent[h]
	if !found {
		return 0, nil, false
	}
	data, err := readWholeEntry(loc)
	if err != nil {
		delete(s.recent, h)
		return 0, nil, false
	}
	return loc.t, data, true
}

// readWholeEntry reads a non-delta pack entry at loc.
func readWholeEntry(loc recentObject) ([]byte, error) {
	// The pack lies in the agent's .git: a FIFO put in its place hung the
	// agent's sync here for good (TestWalls_FuzzOneAgentsGitDir); opened
	// as every file there is, it never blocks.
	f, _, err := OpenGitFile(filepath.Dir(loc.pack), filepath.Base(loc.pack), 1<<62)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The entry header is at most 10 bytes for any size that fits in memory.
	sr := io.NewSectionReader(f, loc.off, 1<<62)
	var hdr [1]byte
	for {
		if _, err := io.ReadFull(sr, hdr[:]); err != nil {
			return nil, err
		}
		if hdr[0]&0x80 == 0 {
			break
		}
	}
	zr, err := zlib.NewReader(sr)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	data, err := pack.Inflate(zr, loc.size)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != loc.size {
		return nil, fmt.Errorf("object at %d in %s: %d bytes, want %d", loc.off, loc.pack, len(data), loc.size)
	}
	return data, nil
}

// objectReader is go-git's object storage with the store's own objects
// (pending and recent packs) in front: what memfsd reads through go-git
// (trees, commits, blobs, a push's pack) sees them without a re-read of
// every pack index.
type objectReader struct {
	storer.EncodedObjectStorer
	s *Objects
}

func (r objectReader) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if ot, data, ok := r.s.ownObject(h); ok {
		if t != plumbing.AnyObject && t != ot {
			return nil, plumbing.ErrObjectNotFound
		}
		o := &plumbing.MemoryObject{}
		o.SetType(ot)
		o.Write(data)
		return o, nil
	}
	if err := r.s.packs.refused(r.s.GitDir, h, r.refusals()); err != nil {
		return nil, err // a packed delta on a bomb, say: go-git would read its base whole
	}
	o, err := r.EncodedObjectStorer.EncodedObject(t, h)
	if err == nil && o.Size() > MaxObjectSize() {
		// Left uninflated by go-git (LargeObjectThreshold): refused here
		// before anyone reads it whole. A loose one never gets this far
		// (gitFS checks it as it is opened).
		return nil, &ObjectTooLargeError{Object: h.String(), Declared: o.Size(), Max: MaxObjectSize()}
	}
	return o, err
}

// refusals is where the store's gitFS notes what it refused (nil when
// go-git's storage is over another file system).
func (r objectReader) refusals() *Refusals {
	if st, ok := r.EncodedObjectStorer.(*filesystem.Storage); ok {
		if fs, ok := st.Filesystem().(gitFS); ok {
			return fs.refused
		}
	}
	return nil
}

func (r objectReader) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := r.s.pendingAt[h]; ok {
		return nil
	}
	if _, ok := r.s.recent[h]; ok {
		return nil
	}
	return r.EncodedObjectStorer.HasEncodedObject(h)
}

func (r objectReader) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if i, ok := r.s.pendingAt[h]; ok {
		return int64(len(r.s.pending[i].Data)), nil
	}
	if loc, ok := r.s.recent[h]; ok {
		return loc.size, nil
	}
	if err := r.s.packs.refused(r.s.GitDir, h, r.refusals()); err != nil {
		return 0, err // go-git reads a delta's data whole to size it
	}
	return r.EncodedObjectStorer.EncodedObjectSize(h)
}
