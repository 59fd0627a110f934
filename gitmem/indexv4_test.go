package gitmem_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// indexVersion is the version in .git/index's header.
func indexVersion(t *testing.T, dir string) uint32 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil || len(data) < 12 {
		t.Fatalf("read index: %v", err)
	}
	return binary.BigEndian.Uint32(data[4:8])
}

// seedNested commits n+1 files in nested folders with the git CLI (so the
// paths share long prefixes and version 4 compresses them).
func seedNested(t *testing.T, dir string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("projects/topic-%02d/notes/2026/note-%04d.md", i%7, i)
		writeFile(t, dir, p, fmt.Sprintf("note %d\n", i))
	}
	// A path over 128 bytes before a short one: a multi-byte strip length.
	writeFile(t, dir, "projects/topic-00/long-"+strings.Repeat("x", 150)+"/a.md", "long\n")
	git(t, dir, "add", "projects")
	git(t, dir, "commit", "-q", "-m", "a person's notes")
}

// An index git wrote in version 4 (feature.manyFiles, or update-index
// --index-version 4: path prefix compression) is read: memfsd commits,
// pushes and pulls; a person's staged change in it survives memfsd's
// write; git reads what memfsd wrote, ls-files equals HEAD's tree and
// status is clean. The same for git's split index in version 4.
func TestRepo_IndexVersion4(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "v4")
	seedNested(t, r.Dir, 300)
	git(t, r.Dir, "config", "feature.manyFiles", "true")
	git(t, r.Dir, "update-index", "--index-version", "4")
	writeFile(t, r.Dir, "projects/topic-03/staged.md", "staged by a person\n")
	git(t, r.Dir, "add", "projects/topic-03/staged.md")
	if v := indexVersion(t, r.Dir); v != 4 {
		t.Fatalf("git wrote index version %d, want 4", v)
	}

	writeFile(t, r.Dir, "projects/topic-01/notes/2026/mine.md", "memfsd's\n")
	if _, err := r.CommitWrite([]string{"projects/topic-01/notes/2026/mine.md"}, "memory: create mine.md"); err != nil {
		t.Fatalf("commit over a version 4 index: %v", err)
	}
	if got := git(t, r.Dir, "diff", "--cached", "--name-status"); got != "A\tprojects/topic-03/staged.md" {
		t.Fatalf("staged after memfsd's write: %q", got)
	}
	if got := strings.Count(git(t, r.Dir, "ls-files"), "\n") + 1; got != 303 {
		t.Fatalf("ls-files after memfsd's write: %d files, want 303", got)
	}
	git(t, r.Dir, "commit", "-q", "-m", "a person's staged file")
	indexMatchesHead(t, r.Dir)
	if _, err := r.Push(context.Background()); err != nil {
		t.Fatalf("push: %v", err)
	}

	// A pull fast-forwards over a version 4 index git wrote again.
	peer := cliClone(t, srv, "v4")
	writeFile(t, peer, "projects/topic-05/notes/2026/remote.md", "from elsewhere\n")
	git(t, peer, "add", ".")
	git(t, peer, "commit", "-q", "-m", "remote note")
	git(t, peer, "push", "-q", "origin", "HEAD:main")
	git(t, r.Dir, "update-index", "--index-version", "4")
	if v := indexVersion(t, r.Dir); v != 4 {
		t.Fatalf("git wrote index version %d, want 4", v)
	}
	if res, err := r.Pull(context.Background()); err != nil || !res.Updated {
		t.Fatalf("pull over a version 4 index: %+v %v", res, err)
	}
	if got, _ := os.ReadFile(filepath.Join(r.Dir, "projects/topic-05/notes/2026/remote.md")); string(got) != "from elsewhere\n" {
		t.Fatalf("pulled file: %q", got)
	}
	indexMatchesHead(t, r.Dir)

	// git's split index in version 4: a replaced entry (nameless in the
	// split part), a deleted one and an added one, all staged.
	git(t, r.Dir, "config", "core.splitIndex", "true")
	git(t, r.Dir, "update-index", "--index-version", "4", "--split-index")
	writeFile(t, r.Dir, "projects/topic-02/notes/2026/note-0002.md", "changed by a person\n")
	writeFile(t, r.Dir, "projects/topic-06/new.md", "new\n")
	git(t, r.Dir, "add", "projects/topic-02/notes/2026/note-0002.md", "projects/topic-06/new.md")
	git(t, r.Dir, "rm", "-q", "--cached", "projects/topic-04/notes/2026/note-0011.md")
	if !indexIsSplit(t, r.Dir) || indexVersion(t, r.Dir) != 4 {
		t.Fatalf("git wrote no split index in version 4 (split %v, version %d)", indexIsSplit(t, r.Dir), indexVersion(t, r.Dir))
	}
	writeFile(t, r.Dir, "projects/topic-01/notes/2026/mine.md", "memfsd's, again\n")
	if _, err := r.CommitWrite([]string{"projects/topic-01/notes/2026/mine.md"}, "memory: update mine.md"); err != nil {
		t.Fatalf("commit over a version 4 split index: %v", err)
	}
	want := "M\tprojects/topic-02/notes/2026/note-0002.md\nD\tprojects/topic-04/notes/2026/note-0011.md\nA\tprojects/topic-06/new.md"
	if got := git(t, r.Dir, "diff", "--cached", "--name-status"); got != want {
		t.Fatalf("staged after memfsd's write:\n%s\nwant\n%s", got, want)
	}
	git(t, r.Dir, "add", "projects/topic-04/notes/2026/note-0011.md")
	git(t, r.Dir, "commit", "-q", "-m", "a person's changes")
	indexMatchesHead(t, r.Dir)
	if _, err := r.Push(context.Background()); err != nil {
		t.Fatalf("push: %v", err)
	}
	checkClean(t, r.Dir)
	git(t, srv.RepoDir("v4"), "fsck", "--strict")
}

// An index memfsd cannot parse (here cut short, as an in-place rewrite
// interrupted by a crash leaves it) is rebuilt from HEAD with a warning
// instead of stopping every commit.
func TestRepo_UnreadableIndexRebuilt(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "bad-index")
	seedNested(t, r.Dir, 20)
	path := filepath.Join(r.GitDir, "index")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r2, err := gitmem.Open(r.Dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatalf("open with a damaged index: %v", err)
	}
	defer r2.Close()
	writeFile(t, r.Dir, "after.md", "after the damage\n")
	if _, err := r2.CommitWrite([]string{"after.md"}, "memory: create after.md"); err != nil {
		t.Fatalf("commit with a damaged index: %v", err)
	}
	indexMatchesHead(t, r.Dir)
	checkClean(t, r.Dir)
}
