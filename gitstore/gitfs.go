package gitstore

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
)

// gitFS is the .git folder as go-git's storage sees it, with one change:
// objects/pack lists only packs that have their index. git writes a pack
// before its index and removes the index first, so a pack without one is
// a pack being written or removed, or left so by a crash; git skips it, but
// go-git lists packs by their .pack files and then fails every lookup
// ("packfile not found") until it is gone.
type gitFS struct{ billy.Filesystem }

// NewGitFS is gitDir as go-git's storage should see it (see gitFS).
func NewGitFS(gitDir string) billy.Filesystem { return gitFS{osfs.New(gitDir)} }

func (f gitFS) ReadDir(path string) ([]os.FileInfo, error) {
	infos, err := f.Filesystem.ReadDir(path)
	if err != nil || filepath.Clean(path) != filepath.Join("objects", "pack") {
		return infos, err
	}
	idx := map[string]bool{}
	for _, fi := range infos {
		if base, ok := strings.CutSuffix(fi.Name(), ".idx"); ok {
			idx[base] = true
		}
	}
	out := infos[:0]
	for _, fi := range infos {
		if base, ok := strings.CutSuffix(fi.Name(), ".pack"); ok && !idx[base] {
			continue
		}
		out = append(out, fi)
	}
	return out, nil
}
