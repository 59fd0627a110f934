package worktree_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memfsd/memfsd/worktree"
)

// TestDir_TemporariesOutsideTheTree: every write (WriteFile, Exchange,
// Create) makes its temporary file in .git/memfsd/tmp, never beside the
// target where a tree path could be, and leaves nothing there; a file
// named like older memfsd temporaries (.memfsd-tmp-*) is an ordinary file;
// a link the agent puts at .git/memfsd/tmp is removed, never followed.
func TestDir_TemporariesOutsideTheTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".git"), 0o700)
	d := mustOpenDir(t, root)
	if _, err := d.WriteFile("sub/a.md", []byte("a\n"), worktree.Regular, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Exchange("sub/a.md", []byte("b\n"), worktree.Regular); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Create("sub/.memfsd-tmp-notes", []byte("c\n"), worktree.Regular); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "sub"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != ".memfsd-tmp-notes" || names[1] != "a.md" {
		t.Fatalf("sub holds %v, want only the two files written", names)
	}
	if err := worktree.Check("sub/.memfsd-tmp-notes"); err != nil {
		t.Fatalf("a file named .memfsd-tmp-*: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(root, filepath.FromSlash(worktree.TempDir))); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	outside := t.TempDir()
	os.RemoveAll(filepath.Join(root, filepath.FromSlash(worktree.TempDir)))
	if err := os.Symlink(outside, filepath.Join(root, filepath.FromSlash(worktree.TempDir))); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteFile("b.md", []byte("b\n"), worktree.Regular, false); err != nil {
		t.Fatalf("a write with a link at %s: %v", worktree.TempDir, err)
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Fatalf("a write went through the link: %v", left)
	}
}
