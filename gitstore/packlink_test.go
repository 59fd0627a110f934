package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/memfsd/memfsd/gitstore"
)

// packLinkedOut makes .git/objects a link to a folder outside the
// repository (the agent has a shell in .git) whose pack folder it
// returns, with .git. The link is above the pack folder's last component,
// which a reader given objects/pack as its folder would not check.
func packLinkedOut(t *testing.T) (gitDir, outside string) {
	t.Helper()
	root := t.TempDir()
	gitDir = filepath.Join(root, "agent", ".git")
	outside = filepath.Join(root, "other-agent", "objects", "pack")
	for _, d := range []string{gitDir, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(gitDir, "objects")); err != nil {
		t.Fatal(err)
	}
	return gitDir, outside
}

// A link at objects does not make the clean-up of a crash's .keep
// files read, and remove, files outside the repository.
func TestClearWriteKeeps_LinkedObjectsFolder(t *testing.T) {
	t.Parallel()
	gitDir, outside := packLinkedOut(t)
	keep := filepath.Join(outside, "pack-1111111111111111111111111111111111111111.keep")
	if err := os.WriteFile(keep, []byte("memfsd: until the ref that needs it moves\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitstore.ClearWriteKeeps(gitDir)
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("a .keep file outside the repository, reached through a linked objects, was removed: %v", err)
	}
}

// ListPacks (the repack's list) refuses a pack index reached through a
// link at objects rather than reading it.
func TestListPacks_LinkedObjectsFolder(t *testing.T) {
	t.Parallel()
	gitDir, outside := packLinkedOut(t)
	base := filepath.Join(outside, "pack-2222222222222222222222222222222222222222")
	idx := append([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}, make([]byte, 256*4+40)...)
	for name, data := range map[string][]byte{".idx": idx, ".pack": []byte("PACK")} {
		if err := os.WriteFile(base+name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	packs, err := gitstore.ListPacks(gitDir)
	if !errors.Is(err, gitstore.ErrNotRegular) {
		t.Fatalf("ListPacks through a linked objects = %v, %v; want ErrNotRegular", packs, err)
	}
}
