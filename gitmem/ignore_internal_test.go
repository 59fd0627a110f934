package gitmem

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestScan_GitignoreThroughTheTree: .gitignore files (the root's and a
// folder's, the latter only below it) are honoured; a FIFO named
// .gitignore does not hang the scan (it held the repo's lock), and a link
// named .gitignore is not followed out of the folder.
func TestScan_GitignoreThroughTheTree(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	outside := filepath.Join(t.TempDir(), "patterns")
	os.WriteFile(outside, []byte("*.md\n"), 0o600)
	write := func(rel, data string) {
		os.MkdirAll(filepath.Dir(filepath.Join(r.Dir, rel)), 0o700)
		os.WriteFile(filepath.Join(r.Dir, rel), []byte(data), 0o600)
	}
	write(".gitignore", "*.tmp\n# a comment\n")
	write("a.tmp", "x")
	write("a.md", "x")
	write("sub/.gitignore", "secret.txt\n")
	write("sub/secret.txt", "x")
	write("secret.txt", "x") // the folder's pattern does not reach up here
	os.MkdirAll(filepath.Join(r.Dir, "fifo"), 0o700)
	unix.Mkfifo(filepath.Join(r.Dir, "fifo", ".gitignore"), 0o600)
	write("fifo/kept.md", "x")
	os.MkdirAll(filepath.Join(r.Dir, "link"), 0o700)
	os.Symlink(outside, filepath.Join(r.Dir, "link", ".gitignore"))
	write("link/kept.md", "x")

	done := make(chan WorkScan, 1)
	go func() {
		sc, err := r.ScanWork()
		if err != nil {
			t.Error(err)
		}
		done <- sc
	}()
	var sc WorkScan
	select {
	case sc = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the scan hung on a FIFO named .gitignore")
	}
	var got []string
	for _, d := range sc.Dirty {
		got = append(got, d.Path)
	}
	for _, want := range []string{"a.md", "secret.txt", "fifo/kept.md", "link/kept.md", "sub/.gitignore"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not seen as a change: %v", want, got)
		}
	}
	for _, ignored := range []string{"a.tmp", "sub/secret.txt"} {
		if slices.Contains(got, ignored) {
			t.Errorf("%s is ignored but seen: %v", ignored, got)
		}
	}
}
