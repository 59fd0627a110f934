package gitstore

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memfsd/memfsd/gitfmt/codec"
)

// Change sets one path of a tree to a blob, or removes it (Hash zero).
type Change struct {
	Path string // slash-separated, relative to the root
	Hash plumbing.Hash
	Mode filemode.FileMode
}

func (c Change) isDelete() bool { return c.Hash.IsZero() }

// ApplyChanges writes the trees along the changed paths, bottom-up, reading
// and writing only the folders on those paths: O(depth × folder size), not
// O(repository). It returns the new root tree.
func (s *Objects) ApplyChanges(root plumbing.Hash, changes []Change) (plumbing.Hash, error) {
	h, err := s.applyDir(root, changes)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if h.IsZero() { // every file gone: the root is the empty tree
		return s.Write(plumbing.TreeObject, nil)
	}
	return h, nil
}

// applyDir returns the new hash of the folder dir (zero when it ends empty).
func (s *Objects) applyDir(dir plumbing.Hash, changes []Change) (plumbing.Hash, error) {
	t, err := s.Tree(dir)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries := make(map[string]object.TreeEntry, len(t.Entries)+len(changes))
	for _, e := range t.Entries {
		entries[e.Name] = e
	}
	sub := map[string][]Change{}
	for _, c := range changes {
		name, rest, nested := strings.Cut(c.Path, "/")
		if name == "" {
			return plumbing.ZeroHash, fmt.Errorf("bad path %q", c.Path)
		}
		if nested {
			sub[name] = append(sub[name], Change{Path: rest, Hash: c.Hash, Mode: c.Mode})
			continue
		}
		if c.isDelete() {
			if e, ok := entries[name]; ok && e.Mode != filemode.Dir {
				delete(entries, name)
			}
			continue
		}
		entries[name] = object.TreeEntry{Name: name, Mode: c.Mode, Hash: c.Hash}
	}
	for name, cs := range sub {
		var base plumbing.Hash
		if e, ok := entries[name]; ok && e.Mode == filemode.Dir {
			base = e.Hash
		} else if allDeletes(cs) {
			continue // nothing to remove below a folder that is not there
		}
		h, err := s.applyDir(base, cs)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h.IsZero() {
			delete(entries, name)
		} else {
			entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	data, list := codec.EncodeTree(entries)
	h, err := s.Write(plumbing.TreeObject, data)
	if err == nil {
		s.cacheTree(h, &object.Tree{Hash: h, Entries: list})
	}
	return h, err
}

func allDeletes(cs []Change) bool {
	for _, c := range cs {
		if !c.isDelete() {
			return false
		}
	}
	return true
}

// EntryAt finds the file at p in tree (ok false when absent or a folder).
func (s *Objects) EntryAt(tree plumbing.Hash, p string) (object.TreeEntry, bool, error) {
	parts := strings.Split(p, "/")
	for i, name := range parts {
		t, err := s.Tree(tree)
		if err != nil {
			return object.TreeEntry{}, false, err
		}
		var found *object.TreeEntry
		for k := range t.Entries {
			if t.Entries[k].Name == name {
				found = &t.Entries[k]
				break
			}
		}
		if found == nil {
			return object.TreeEntry{}, false, nil
		}
		if i == len(parts)-1 {
			if found.Mode == filemode.Dir || found.Mode == filemode.Submodule {
				return object.TreeEntry{}, false, nil
			}
			return *found, true, nil
		}
		if found.Mode != filemode.Dir {
			return object.TreeEntry{}, false, nil
		}
		tree = found.Hash
	}
	return object.TreeEntry{}, false, nil
}

// ClashesAt reports whether a file at p would clash with tree: a folder
// stands at p, or a file stands where one of p's folders goes.
func (s *Objects) ClashesAt(tree plumbing.Hash, p string) (bool, error) {
	parts := strings.Split(p, "/")
	for i, name := range parts {
		t, err := s.Tree(tree)
		if err != nil {
			return false, err
		}
		var found *object.TreeEntry
		for k := range t.Entries {
			if t.Entries[k].Name == name {
				found = &t.Entries[k]
				break
			}
		}
		if found == nil {
			return false, nil
		}
		last := i == len(parts)-1
		isDir := found.Mode == filemode.Dir
		switch {
		case last:
			return isDir, nil
		case !isDir:
			return true, nil // a file where our folder goes
		}
		tree = found.Hash
	}
	return false, nil
}
