package gitmem_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// memfsd keeps the index parsed between its writes; a person's change to
// the index in between (a staged file, a same-size mode change) must be
// what the next write patches, not the copy memfsd remembers.
func TestRepo_IndexChangedBetweenWrites(t *testing.T) {
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "ixc")
	commit := func(p string) {
		t.Helper()
		writeFile(t, r.Dir, p, "text of "+p+"\n")
		if _, err := r.CommitWrite([]string{p}, "memory: create "+p); err != nil {
			t.Fatal(err)
		}
	}
	commit("a.md")
	writeFile(t, r.Dir, "staged.md", "a person's staged file\n")
	git(t, r.Dir, "add", "staged.md")
	commit("b.md")
	if got := git(t, r.Dir, "diff", "--cached", "--name-only"); got != "staged.md" {
		t.Fatalf("staged after memfsd's write: %q, want staged.md", got)
	}
	// The same index size, only the mode bytes differ.
	git(t, r.Dir, "update-index", "--chmod=+x", "b.md")
	os.Chmod(filepath.Join(r.Dir, "b.md"), 0o755)
	commit("c.md")
	if got := git(t, r.Dir, "ls-files", "-s", "b.md"); !strings.HasPrefix(got, "100755") {
		t.Fatalf("b.md in the index after memfsd's write: %q, want mode 100755", got)
	}
	git(t, r.Dir, "commit", "-q", "-m", "a person's commit")
	commit("d.md")
	if st := git(t, r.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("status: %q", st)
	}
	git(t, r.Dir, "fsck", "--strict")
}
