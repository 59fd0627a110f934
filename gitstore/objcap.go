package gitstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
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
// uninflated: LargeObjectThreshold), and a bomb is an error naming it.

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
	Inflates bool // it inflates past Declared (a zlib bomb)
}

func (e *ObjectTooLargeError) Error() string {
	what := fmt.Sprintf("its header states %d bytes, the cap is %d", e.Declared, e.Max)
	if e.Inflates {
		what = fmt.Sprintf("it inflates past the %d bytes its header states", e.Declared)
	}
	return fmt.Sprintf("read object %s: %v: %s (not inflated; written by the agent's own git: drop it from the branch and run git gc --prune=now in the folder)", e.Object, ErrTooLarge, what)
}

func (e *ObjectTooLargeError) Unwrap() error { return ErrTooLarge }

// looseRel matches the path of a loose object below .git.
var looseRel = regexp.MustCompile(`^objects/[0-9a-f]{2}/[0-9a-f]{38}$`)

// checkLoose inflates the loose object f (at rel) to its end without
// keeping a byte: its header's size must be within the cap and the stream
// must hold exactly that many bytes. f is left at its start.
func checkLoose(f *os.File, rel string) error {
	id := rel[len("objects/"):len("objects/")+2] + rel[len("objects/")+3:]
	zr, err := zlib.NewReader(bufio.NewReaderSize(f, 4096))
	if err != nil {
		return fmt.Errorf("read object %s: not a zlib stream: %w", id, err)
	}
	defer zr.Close()
	var hdr []byte
	var one [1]byte
	for {
		if _, err := io.ReadFull(zr, one[:]); err != nil {
			return fmt.Errorf("read object %s: bad header: %w", id, err)
		}
		if one[0] == 0 {
			break
		}
		if len(hdr) >= 32 {
			return fmt.Errorf("read object %s: bad header: no end within 32 bytes", id)
		}
		hdr = append(hdr, one[0])
	}
	_, sz, ok := bytes.Cut(hdr, []byte{' '})
	size, err := strconv.ParseInt(string(sz), 10, 64)
	if !ok || err != nil || size < 0 {
		return fmt.Errorf("read object %s: bad header %q", id, hdr)
	}
	if max := MaxObjectSize(); size > max {
		return &ObjectTooLargeError{Object: id, Declared: size, Max: max}
	}
	n, err := io.CopyN(io.Discard, zr, size+1)
	switch {
	case n > size:
		return &ObjectTooLargeError{Object: id, Declared: size, Max: MaxObjectSize(), Inflates: true}
	case err != nil && !errors.Is(err, io.EOF):
		return fmt.Errorf("read object %s: %w", id, err)
	case n < size:
		return fmt.Errorf("read object %s: %d bytes inflated, its header states %d", id, n, size)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return nil
}
