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
