package gitstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The walk used where openat2 is missing (kernels before 5.6) refuses a
// link on the way as openat2 does. Not parallel: it sets noOpenat2.
func TestOpenGitFile_WalkRefusesLinkOnTheWay(t *testing.T) {
	was := noOpenat2.Load()
	noOpenat2.Store(true)
	defer noOpenat2.Store(was)
	root := t.TempDir()
	gitDir := filepath.Join(root, "a", ".git")
	outside := filepath.Join(root, "b")
	for _, d := range []string{filepath.Join(gitDir, "refs", "remotes"), filepath.Join(outside, "origin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id := "0123456789abcdef0123456789abcdef01234567\n"
	if err := os.WriteFile(filepath.Join(outside, "origin", "main"), []byte(id), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitDir, "HEAD"), []byte(id), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadGitFile(gitDir, "HEAD", MaxRefSize); err != nil || string(data) != id {
		t.Fatalf("HEAD by the walk: %q, %v", data, err)
	}
	if err := os.Symlink(outside, filepath.Join(gitDir, "refs", "remotes", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadGitFile(gitDir, "refs/remotes/x/origin/main", MaxRefSize); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("walk through a linked folder: err %v, want ErrNotRegular", err)
	}
}

// The walk, for gitFS and the listings (issue 38): a fan-out folder that
// is a link makes its objects missing, its listing refused and its entry
// left out of objects/, as with openat2. Not parallel: it sets noOpenat2.
func TestGitFS_WalkRefusesLinkedFanOut(t *testing.T) {
	was := noOpenat2.Load()
	noOpenat2.Store(true)
	defer noOpenat2.Store(was)
	root := t.TempDir()
	gitDir := filepath.Join(root, "a1", ".git")
	other := filepath.Join(root, "a2", ".git", "objects", "ab")
	for _, d := range []string{filepath.Join(gitDir, "objects", "cd"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rest := "0123456789abcdef0123456789abcdef012345"
	os.WriteFile(filepath.Join(other, rest), []byte("a2's object"), 0o444)
	os.WriteFile(filepath.Join(gitDir, "objects", "cd", rest), []byte("a1's own"), 0o444)
	if err := os.Symlink(other, filepath.Join(gitDir, "objects", "ab")); err != nil {
		t.Fatal(err)
	}
	refused := &Refusals{}
	fsys := NewGitFSNoting(gitDir, refused)
	if _, err := fsys.Open("objects/ab/" + rest); !os.IsNotExist(err) {
		t.Fatalf("open through the linked fan-out: %v, want not exist", err)
	}
	if _, err := fsys.Stat("objects/ab/" + rest); !os.IsNotExist(err) {
		t.Fatalf("stat through the linked fan-out: %v, want not exist", err)
	}
	if _, err := fsys.ReadDir("objects/ab"); !os.IsNotExist(err) {
		t.Fatalf("list the linked fan-out: %v, want not exist", err)
	}
	infos, err := fsys.ReadDir("objects")
	if err != nil || len(infos) != 1 || infos[0].Name() != "cd" || !infos[0].IsDir() {
		t.Fatalf("list objects: %v %v; want only cd", infos, err)
	}
	if _, err := ReadDirBeneath(gitDir, "objects/ab"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadDirBeneath through the link: %v, want ErrNotRegular", err)
	}
	if len(refused.List()) == 0 {
		t.Fatal("nothing noted as refused")
	}
}
