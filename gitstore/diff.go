package gitstore

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// FileChange is one file that differs between two trees. A zero hash on a
// side means the file is absent there.
type FileChange struct {
	Path     string
	From, To object.TreeEntry
}

// DiffTrees lists the files that differ between trees a and b, descending
// only into subtrees whose hashes differ: O(change), not O(repository).
func (s *Objects) DiffTrees(a, b plumbing.Hash, prefix string, out []FileChange) ([]FileChange, error) {
	if a == b {
		return out, nil
	}
	ta, err := s.Tree(a)
	if err != nil {
		return out, err
	}
	tb, err := s.Tree(b)
	if err != nil {
		return out, err
	}
	ea := entryMap(ta)
	eb := entryMap(tb)
	for name, x := range ea {
		y, ok := eb[name]
		if ok && x.Hash == y.Hash && x.Mode == y.Mode {
			continue
		}
		if !ok {
			y = object.TreeEntry{}
		}
		if out, err = s.DiffEntry(prefix+name, x, y, out); err != nil {
			return out, err
		}
	}
	for name, y := range eb {
		if _, ok := ea[name]; !ok {
			if out, err = s.DiffEntry(prefix+name, object.TreeEntry{}, y, out); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// DiffEntry compares one name whose entries differ; either may be a folder.
func (s *Objects) DiffEntry(path string, x, y object.TreeEntry, out []FileChange) ([]FileChange, error) {
	xDir, yDir := x.Mode == filemode.Dir, y.Mode == filemode.Dir
	var xTree, yTree plumbing.Hash
	if xDir {
		xTree = x.Hash
	}
	if yDir {
		yTree = y.Hash
	}
	if xDir || yDir {
		var err error
		if out, err = s.DiffTrees(xTree, yTree, path+"/", out); err != nil {
			return out, err
		}
	}
	fx, fy := x, y
	if xDir || x.Mode == filemode.Submodule {
		fx = object.TreeEntry{}
	}
	if yDir || y.Mode == filemode.Submodule {
		fy = object.TreeEntry{}
	}
	if !fx.Hash.IsZero() || !fy.Hash.IsZero() {
		fx.Name, fy.Name = "", ""
		out = append(out, FileChange{Path: path, From: fx, To: fy})
	}
	return out, nil
}

func entryMap(t *object.Tree) map[string]object.TreeEntry {
	m := make(map[string]object.TreeEntry, len(t.Entries))
	for _, e := range t.Entries {
		m[e.Name] = e
	}
	return m
}

// NewObjects adds to seen every tree and blob reachable from tree b that is
// not in tree a, descending only into changed subtrees.
func (s *Objects) NewObjects(a, b plumbing.Hash, seen map[plumbing.Hash]bool) error {
	if a == b || b.IsZero() || seen[b] {
		return nil
	}
	seen[b] = true
	ta, err := s.Tree(a)
	if err != nil {
		return err
	}
	tb, err := s.Tree(b)
	if err != nil {
		return err
	}
	ea := entryMap(ta)
	for _, y := range tb.Entries {
		x, ok := ea[y.Name]
		if ok && x.Hash == y.Hash {
			continue
		}
		switch y.Mode {
		case filemode.Dir:
			var base plumbing.Hash
			if ok && x.Mode == filemode.Dir {
				base = x.Hash
			}
			if err := s.NewObjects(base, y.Hash, seen); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			seen[y.Hash] = true
		}
	}
	return nil
}
