package gitstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
)

// Objects the agent's own git wrote are input too: a loose object is a
// zlib stream whose header states its size, and a small file can inflate
// to gigabytes (a zlib bomb), or to more than its header says. go-git
// copies a loose object whole into memory, however far it inflates, and
// memfsd reads objects on the push check, history and search: one such
// object killed the daemon for every agent. So every object is inflated
// against its header's size and a cap before go-git reads it (gitFS
// checks each loose object as it is opened; objectReader refuses a packed
// one whose stated size is over the cap, which go-git then leaves
// uninflated: LargeObjectThreshold, and a packed delta whose sizes or base
// are over it: packcap.go), and a bomb is an error naming it.

// DefaultMaxObjectSize is the largest object memfsd inflates unless
// SetMaxObjectSize raised it (the daemon raises it to --max-file-bytes).
const DefaultMaxObjectSize = 64 << 20

var maxObjectSize atomic.Int64

func init() { maxObjectSize.Store(DefaultMaxObjectSize) }

// MaxObjectSize is the largest object memfsd inflates.
func MaxObjectSize() int64 { return maxObjectSize.Load() }

// SetMaxObjectSize makes n the largest object memfsd inflates (never
// below DefaultMaxObjectSize): the daemon calls it once at start with
// --max-file-bytes, so every file it may commit can be read back.
func SetMaxObjectSize(n int64) { maxObjectSize.Store(max(n, DefaultMaxObjectSize)) }

// ObjectTooLargeError is an object memfsd will not inflate: its header
// states more than the cap, or it inflates to more (or less) than its
// header states.
type ObjectTooLargeError struct {
	Object   string // the object's id
	Declared int64  // the size its header states
	Max      int64
	Inflates bool   // it inflates past Declared (a zlib bomb)
	Why      string // what is over the cap, when not its header (a packed delta's base)
}

func (e *ObjectTooLargeError) Error() string {
	return fmt.Sprintf("read object %s: %v: %s (not inflated; written by the agent's own git: drop it from the branch and run git gc --prune=now in the folder)", e.Object, ErrTooLarge, e.what())
}

// what says what is over the cap.
func (e *ObjectTooLargeError) what() string {
	switch {
	case e.Why != "":
		return e.Why
	case e.Inflates:
		return fmt.Sprintf("it inflates past the %d bytes its header states", e.Declared)
	}
	return fmt.Sprintf("its header states %d bytes, the cap is %d", e.Declared, e.Max)
}

func (e *ObjectTooLargeError) Unwrap() error { return ErrTooLarge }

// looseRel matches the path of a loose object below .git.
var looseRel = regexp.MustCompile(`^objects/[0-9a-f]{2}/[0-9a-f]{38}$`)

// checkLoose inflates the loose object f (at rel) to its end without
// keeping a byte: its header's size must be within the cap and the stream
// must hold exactly that many bytes. f is left at its start, and what it
// read is summed (checkedSums): the agent may rewrite the file in place
// after the check, so only those bytes are ever read from it
// (checkedFile).
func checkLoose(f *os.File, rel string) (*checkedSums, error) {
	id := looseID(rel)
	sums := &checkedSums{}
	zr, err := zlib.NewReader(bufio.NewReaderSize(io.TeeReader(f, sums), 4096))
	if err != nil {
		return nil, fmt.Errorf("read object %s: not a zlib stream: %w", id, err)
	}
	defer zr.Close()
	var hdr []byte
	var one [1]byte
	for {
		if _, err := io.ReadFull(zr, one[:]); err != nil {
			return nil, fmt.Errorf("read object %s: bad header: %w", id, err)
		}
		if one[0] == 0 {
			break
		}
		if len(hdr) >= 32 {
			return nil, fmt.Errorf("read object %s: bad header: no end within 32 bytes", id)
		}
		hdr = append(hdr, one[0])
	}
	_, sz, ok := bytes.Cut(hdr, []byte{' '})
	size, err := strconv.ParseInt(string(sz), 10, 64)
	if !ok || err != nil || size < 0 {
		return nil, fmt.Errorf("read object %s: bad header %q", id, hdr)
	}
	if max := MaxObjectSize(); size > max {
		return nil, &ObjectTooLargeError{Object: id, Declared: size, Max: max}
	}
	n, err := io.CopyN(io.Discard, zr, size+1)
	switch {
	case n > size:
		return nil, &ObjectTooLargeError{Object: id, Declared: size, Max: MaxObjectSize(), Inflates: true}
	case err != nil && !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("read object %s: %w", id, err)
	case n < size:
		return nil, fmt.Errorf("read object %s: %d bytes inflated, its header states %d", id, n, size)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	sums.end()
	return sums, nil
}

// looseID is the object id of the loose object at rel.
func looseID(rel string) string {
	return rel[len("objects/"):len("objects/")+2] + rel[len("objects/")+3:]
}

// checkChunk is the size of the pieces checkedSums sums and checkedFile
// reads and compares.
const checkChunk = 32 << 10

// checkedSums are the SHA-256 sums of the bytes checkLoose read, in
// pieces of checkChunk (the last may be shorter); n is how many bytes.
type checkedSums struct {
	sums [][sha256.Size]byte
	h    hash.Hash
	part int // bytes in h
	n    int64
}

func (s *checkedSums) Write(p []byte) (int, error) {
	if s.h == nil {
		s.h = sha256.New()
	}
	written := len(p)
	s.n += int64(written)
	for len(p) > 0 {
		k := min(len(p), checkChunk-s.part)
		s.h.Write(p[:k])
		s.part += k
		p = p[k:]
		if s.part == checkChunk {
			s.sums = append(s.sums, [sha256.Size]byte(s.h.Sum(nil)))
			s.h.Reset()
			s.part = 0
		}
	}
	return written, nil
}

// end sums the last, shorter piece.
func (s *checkedSums) end() {
	if s.part > 0 {
		s.sums = append(s.sums, [sha256.Size]byte(s.h.Sum(nil)))
		s.h.Reset()
		s.part = 0
	}
}

// ErrChangedAfterCheck is a loose object rewritten in place between
// memfsd's check of it and its read.
var ErrChangedAfterCheck = errors.New("changed after it was checked")

// checkedFile is a loose object as checkLoose checked it: it reads the
// file piece by piece and gives out a piece only when its sum is the one
// checked, and nothing past what was checked. A file the agent rewrote in
// place meanwhile (a valid object checked, a bomb read) is an error, never
// inflated: what go-git inflates is what was checked.
type checkedFile struct {
	*readFile
	id   string
	sums *checkedSums
	buf  []byte // the piece being given out
	next int    // the piece to read next
	off  int64  // bytes of the file read so far
	err  error
}

func (f *checkedFile) Read(p []byte) (int, error) {
	if len(f.buf) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		if f.off >= f.sums.n {
			return 0, io.EOF
		}
		piece := make([]byte, min(checkChunk, f.sums.n-f.off))
		if _, err := io.ReadFull(f.readFile.File, piece); err != nil || sha256.Sum256(piece) != f.sums.sums[f.next] {
			f.err = fmt.Errorf("read object %s: %w (the agent's git rewrote it in place: not read; drop it and run git gc --prune=now in the folder)", f.id, ErrChangedAfterCheck)
			return 0, f.err
		}
		f.buf, f.next, f.off = piece, f.next+1, f.off+int64(len(piece))
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// Seek back to the start reads it again, checked; any other is refused.
func (f *checkedFile) Seek(offset int64, whence int) (int64, error) {
	if offset != 0 || whence != io.SeekStart {
		return 0, fmt.Errorf("read object %s: only a read from the start is checked", f.id)
	}
	if _, err := f.readFile.File.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	f.buf, f.next, f.off, f.err = nil, 0, 0, nil
	return 0, nil
}

func (f *checkedFile) ReadAt([]byte, int64) (int, error) {
	return 0, fmt.Errorf("read object %s: only a read from the start is checked", f.id)
}

// WriteTo and ReadFrom hide *os.File's (io.Copy would read past the check).
func (f *checkedFile) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{f})
}
