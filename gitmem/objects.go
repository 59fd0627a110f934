package gitmem

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objectStore writes loose objects directly (go-git's SetEncodedObject
// stages every object in a temp file under objects/pack and re-writes
// objects a pack already holds) and reads through go-git's storage.
type objectStore struct {
	dir  string // .git/objects
	st   *filesystem.Storage
	sync bool
	// written are the files created since the last flush, to fsync before a
	// ref may point at them.
	written []string
	dirs    map[string]bool
}

func newObjectStore(gitDir string, st *filesystem.Storage, sync bool) *objectStore {
	return &objectStore{dir: filepath.Join(gitDir, "objects"), st: st, sync: sync, dirs: map[string]bool{}}
}

// hashObject is git's object id of data of type t.
func hashObject(t plumbing.ObjectType, data []byte) plumbing.Hash {
	h := sha1.New()
	h.Write(t.Bytes())
	h.Write([]byte{' '})
	h.Write(strconv.AppendInt(nil, int64(len(data)), 10))
	h.Write([]byte{0})
	h.Write(data)
	var out plumbing.Hash
	copy(out[:], h.Sum(nil))
	return out
}

// has reports whether the object exists, loose or packed.
func (s *objectStore) has(h plumbing.Hash) bool {
	if _, err := os.Stat(s.loosePath(h)); err == nil {
		return true
	}
	return s.st.HasEncodedObject(h) == nil
}

func (s *objectStore) loosePath(h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(s.dir, hex[:2], hex[2:])
}

// write stores data as a loose object of type t unless it exists already.
func (s *objectStore) write(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := hashObject(t, data)
	if s.has(h) {
		return h, nil
	}
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed)
	zw.Write(t.Bytes())
	zw.Write([]byte{' '})
	zw.Write(strconv.AppendInt(nil, int64(len(data)), 10))
	zw.Write([]byte{0})
	zw.Write(data)
	if err := zw.Close(); err != nil {
		return h, fmt.Errorf("compress object %s: %w", h, err)
	}
	path := s.loosePath(h)
	dir := filepath.Dir(path)
	if err := os.Mkdir(dir, 0o755); err == nil {
		s.dirs[dir] = true
	} else if !errors.Is(err, fs.ErrExist) {
		return h, fmt.Errorf("write object %s: %w", h, err)
	}
	tmp, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return h, fmt.Errorf("write object %s: %w", h, err)
	}
	_, err = tmp.Write(buf.Bytes())
	if err == nil && s.sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return h, fmt.Errorf("write object %s: %w", h, err)
	}
	s.written = append(s.written, path)
	return h, nil
}

// flush makes the objects written so far durable: the files were synced as
// they were written; the folders holding new names are synced here.
func (s *objectStore) flush() error {
	defer func() { s.written = s.written[:0]; clear(s.dirs) }()
	if !s.sync || len(s.written) == 0 {
		return nil
	}
	dirs := map[string]bool{}
	for _, p := range s.written {
		dirs[filepath.Dir(p)] = true
	}
	for d := range s.dirs {
		dirs[filepath.Dir(d)] = true // objects/ itself gained a folder
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return fmt.Errorf("sync %s: %w", d, err)
		}
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// tree reads a tree; the zero hash is the empty tree.
func (s *objectStore) tree(h plumbing.Hash) (*object.Tree, error) {
	if h.IsZero() {
		return &object.Tree{}, nil
	}
	t, err := object.GetTree(s.st, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// The git CLI may have packed objects behind our back: go-git keeps
		// a stale list of packs until told to look again.
		s.st.ObjectStorage.Reindex()
		t, err = object.GetTree(s.st, h)
	}
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	return t, nil
}

// commit reads a commit.
func (s *objectStore) commit(h plumbing.Hash) (*object.Commit, error) {
	c, err := object.GetCommit(s.st, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		s.st.ObjectStorage.Reindex()
		c, err = object.GetCommit(s.st, h)
	}
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	return c, nil
}

// blob reads a blob's content.
func (s *objectStore) blob(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(s.st, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	defer r.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	return buf.Bytes(), nil
}
