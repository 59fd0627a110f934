package pack

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitfmt/codec"
	"github.com/memfsd/memfsd/internal/testgit"
)

// The pack Encode writes is one git reads (verify-pack, cat-file in a
// repository holding only it), and its index is byte for byte the one
// `git index-pack` writes for that pack; an object large enough for a
// multi-byte size header is among them.
func TestEncode_GitReadsOursSameIndex(t *testing.T) {
	t.Parallel()
	var objs []Object
	for i := 0; i < 40; i++ {
		data := []byte(fmt.Sprintf("memory %d\n%s", i, strings.Repeat("line\n", i*i)))
		objs = append(objs, Object{Hash: codec.Hash(plumbing.BlobObject, data), Type: plumbing.BlobObject, Data: data})
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
	objs = append(objs, Object{Hash: codec.Hash(plumbing.BlobObject, big), Type: plumbing.BlobObject, Data: big})
	p, idx, offsets := Encode(objs)
	if len(offsets) != len(objs) {
		t.Fatalf("%d offsets for %d objects", len(offsets), len(objs))
	}
	if want := gitIndex(t, p); !bytes.Equal(idx, want) {
		t.Fatalf("our index (%d bytes) differs from git index-pack's (%d bytes)", len(idx), len(want))
	}

	repo := t.TempDir()
	testgit.Run(t, repo, "init", "-q", "--bare")
	name := filepath.Join(repo, "objects", "pack", "pack-"+plumbing.Hash(p[len(p)-20:]).String())
	if err := os.WriteFile(name+".pack", p, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".idx", idx, 0o444); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "verify-pack", name+".idx").CombinedOutput(); err != nil {
		t.Fatalf("git verify-pack: %v %s", err, out)
	}
	for i, o := range objs {
		if got := testgit.Run(t, repo, "cat-file", "-s", o.Hash.String()); got != fmt.Sprint(len(o.Data)) {
			t.Fatalf("object %d: git reads %s bytes, want %d", i, got, len(o.Data))
		}
	}
	if got := testgit.Run(t, repo, "cat-file", "-p", objs[7].Hash.String()); got != strings.TrimSpace(string(objs[7].Data)) {
		t.Fatalf("object 7 reads %q", got)
	}
}
