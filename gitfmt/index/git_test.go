package index_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/internal/testgit"
)

// gitRepo is a work tree of n files in nested folders, all staged by git:
// long shared prefixes (what version 4 compresses) and a path over 128
// bytes (a multi-byte strip length).
func gitRepo(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	testgit.Run(t, dir, "init", "-q", "-b", "main")
	write := func(p, data string) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		write(fmt.Sprintf("projects/topic-%02d/notes/note-%04d.md", i%7, i), fmt.Sprintf("note %d\n", i))
	}
	write("projects/topic-00/long-"+strings.Repeat("x", 150)+"/a.md", "long\n")
	write("run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	testgit.Run(t, dir, "add", ".")
	return dir
}

// readIndex parses dir's .git/index the way memfsd reads one: a split
// index merged over its shared index.
func readIndex(t *testing.T, dir string) *index.Index {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	ix, link, err := index.Parse(data)
	if err != nil {
		t.Fatalf("parse the index git wrote: %v", err)
	}
	if link == nil {
		return ix
	}
	shared, err := os.ReadFile(filepath.Join(dir, ".git", "sharedindex."+hex.EncodeToString(link.Base[:])))
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := index.Parse(shared)
	if err != nil {
		t.Fatalf("parse the shared index git wrote: %v", err)
	}
	if ix.Entries, err = index.MergeSplit(base.Entries, ix.Entries, link); err != nil {
		t.Fatalf("merge the split index git wrote: %v", err)
	}
	return ix
}

// lsStage is the index as `git ls-files --stage` prints it.
func lsStage(ix *index.Index) string {
	var b strings.Builder
	for _, e := range ix.Entries {
		info := e.Info()
		fmt.Fprintf(&b, "%o %s %d\t%s\n", uint32(info.Mode), info.Hash, e.Stage, e.Path)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Every index git writes, versions 2, 3 and 4 and split over a shared
// index (with entries replaced, deleted and added since the split), reads
// as the entries `git ls-files --stage` lists.
func TestParse_ReadsGitsIndexes(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t, 300)
	for _, v := range []string{"2", "3", "4"} {
		testgit.Run(t, dir, "update-index", "--index-version", v)
		if got, want := lsStage(readIndex(t, dir)), testgit.Run(t, dir, "ls-files", "--stage"); got != want {
			t.Fatalf("version %s read as\n%.500s\nwant\n%.500s", v, got, want)
		}
	}
	// Intent-to-add sets an extended flag: version 3.
	if err := os.WriteFile(filepath.Join(dir, "later.md"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testgit.Run(t, dir, "add", "-N", "later.md")
	testgit.Run(t, dir, "config", "core.splitIndex", "true")
	for _, v := range []string{"4", "3"} {
		testgit.Run(t, dir, "update-index", "--index-version", v, "--split-index")
		if err := os.WriteFile(filepath.Join(dir, "projects/topic-02/notes/note-0002.md"), []byte("changed "+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "projects/new-"+v+".md"), []byte("new\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		testgit.Run(t, dir, "add", ".")
		testgit.Run(t, dir, "rm", "-q", "--cached", map[string]string{"4": "projects/topic-04/notes/note-0011.md", "3": "projects/topic-04/notes/note-0018.md"}[v])
		data, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if _, link, err := index.Parse(data); err != nil || link == nil {
			t.Fatalf("git wrote no split index (%v)", err)
		}
		if got, want := lsStage(readIndex(t, dir)), testgit.Run(t, dir, "ls-files", "--stage"); got != want {
			t.Fatalf("split version %s read as\n%s\nwant\n%s", v, got, want)
		}
	}
}

// What Encode and EncodeSplit write, git reads back entry for entry; an
// entry Set, another Removed, and a split index over a shared one that
// lacks the one and holds the other.
func TestEncode_GitReadsOurs(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t, 200)
	want := testgit.Run(t, dir, "ls-files", "--stage")
	ix := readIndex(t, dir)
	indexPath := filepath.Join(dir, ".git", "index")
	if err := os.WriteFile(indexPath, ix.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := testgit.Run(t, dir, "ls-files", "--stage"); got != want {
		t.Fatalf("git read our whole index as\n%.500s\nwant\n%.500s", got, want)
	}
	testgit.Run(t, dir, "fsck", "--no-dangling") // also checks the index's checksum and order

	// A split index over a shared one taken now, then a change on each side.
	base := &index.Shared{Entries: slices.Clone(ix.Entries)}
	whole := ix.Encode()
	base.Size = int64(len(whole))
	copy(base.Name[:], whole[len(whole)-20:])
	if err := os.WriteFile(filepath.Join(dir, ".git", "sharedindex."+hex.EncodeToString(base.Name[:])), whole, 0o644); err != nil {
		t.Fatal(err)
	}
	blob := plumbing.NewHash(testgit.Run(t, dir, "hash-object", "-w", "--stdin", "run.sh"))
	ix.Set("projects/added.md", blob, filemode.Regular, nil)
	ix.Set("projects/topic-01/notes/note-0001.md", blob, filemode.Regular, nil)
	ix.Remove("projects/topic-03")
	data, changed := ix.EncodeSplit(base)
	if changed == 0 {
		t.Fatal("EncodeSplit saw no change")
	}
	if err := os.WriteFile(indexPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got := testgit.Run(t, dir, "ls-files", "--stage")
	if got != lsStage(ix) {
		t.Fatalf("git read our split index as\n%.800s\nwant\n%.800s", got, lsStage(ix))
	}
	if strings.Contains(got, "projects/topic-03/") || !strings.Contains(got, blob.String()+" 0\tprojects/added.md") {
		t.Fatalf("git's listing lacks the changes:\n%.800s", got)
	}
}
