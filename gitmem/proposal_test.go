package gitmem_test

import (
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestRepo_CommitOnto_ObjectsOnDisk: the commit a proposal's ref points
// at is on disk when CommitOnto returns (git reads it, fsck is clean),
// not only staged in memory until some later commit flushes.
func TestRepo_CommitOnto_ObjectsOnDisk(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "onto")
	writeFile(t, r.Dir, "a.md", "one\n")
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: create a.md"); err != nil {
		t.Fatal(err)
	}
	base, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.CommitOnto("refs/heads/proposals/x/1", base, map[string][]byte{"a.md": []byte("two\n"), "b.md": []byte("new\n")}, "memory: propose", gitmem.Signature{Name: "x", Email: "x@memfsd.local"})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, r.Dir, "show", "proposals/x/1:b.md"); got != "new" {
		t.Fatalf("proposal's b.md = %q", got)
	}
	if got := git(t, r.Dir, "rev-parse", "proposals/x/1"); got != h.String() {
		t.Fatalf("ref = %s, want %s", got, h)
	}
	git(t, r.Dir, "fsck", "--strict")
}
