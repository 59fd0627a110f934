package gitmem_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// indexIsSplit reports whether .git/index carries a split index's link.
func indexIsSplit(t *testing.T, dir string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(data[12:], []byte("link"))
}

func sharedIndexes(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
	return m
}

// indexMatchesHead: git's view of the index (the split merged) is HEAD's
// tree, and git status sees the work tree clean, with nothing staged.
func indexMatchesHead(t *testing.T, dir string) {
	t.Helper()
	var want strings.Builder
	for _, l := range strings.Split(git(t, dir, "ls-tree", "-r", "HEAD"), "\n") {
		// "<mode> blob <hash>\t<path>" → "<mode> <hash> 0\t<path>"
		f := strings.Fields(strings.SplitN(l, "\t", 2)[0])
		fmt.Fprintf(&want, "%s %s 0\t%s\n", f[0], f[2], strings.SplitN(l, "\t", 2)[1])
	}
	if got := git(t, dir, "ls-files", "-s"); got+"\n" != want.String() {
		t.Fatalf("git ls-files -s differs from HEAD's tree:\n%s\nwant\n%s", got, want.String())
	}
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status: %q", st)
	}
}

// memfsd writes a split index over a shared one once the index is big,
// and the git CLI reads it as the whole: ls-files equals HEAD's tree,
// status is clean; a person's staged change and git's own split index
// (core.splitIndex) are read and kept; many changes start a new shared
// index, and the old one stays for git's temporary indexes.
func TestRepo_SplitIndex(t *testing.T) {
	defer gitmem.SetSplitMinEntries(40)()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "split")
	// Files written in the index's second are racy: each write records
	// them again with size 0, in the split part (a change). Files an hour
	// old keep the counts of changes below exact.
	past := time.Now().Add(-time.Hour)
	commitN := func(t *testing.T, r *gitmem.Repo, from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			p := fmt.Sprintf("notes/n%04d.md", i)
			writeFile(t, r.Dir, p, fmt.Sprintf("note %d\n", i))
			os.Chtimes(filepath.Join(r.Dir, p), past, past)
			if _, err := r.CommitWrite([]string{p}, "memory: create "+p); err != nil {
				t.Fatal(err)
			}
		}
	}
	commitN(t, r, 0, 39)
	if indexIsSplit(t, r.Dir) || len(sharedIndexes(t, r.Dir)) != 0 {
		t.Fatal("a split index below the threshold")
	}
	commitN(t, r, 39, 3)
	if !indexIsSplit(t, r.Dir) || len(sharedIndexes(t, r.Dir)) != 1 {
		t.Fatalf("no split index at 42 entries: %v", sharedIndexes(t, r.Dir))
	}
	indexMatchesHead(t, r.Dir)
	first := sharedIndexes(t, r.Dir)[0]

	// Updates (replaced entries), a delete (a deleted entry), additions.
	writeFile(t, r.Dir, "notes/n0003.md", "changed\n")
	writeFile(t, r.Dir, "notes/n0010.md", "changed too\n")
	os.Chtimes(filepath.Join(r.Dir, "notes/n0003.md"), past, past)
	os.Chtimes(filepath.Join(r.Dir, "notes/n0010.md"), past, past)
	os.Remove(filepath.Join(r.Dir, "notes/n0007.md"))
	if _, err := r.CommitWrite([]string{"notes/n0003.md", "notes/n0010.md", "notes/n0007.md"}, "memory: three"); err != nil {
		t.Fatal(err)
	}
	commitN(t, r, 100, 2)
	if sharedIndexes(t, r.Dir)[0] != first || len(sharedIndexes(t, r.Dir)) != 1 {
		t.Fatalf("a new shared index for a few changes: %v", sharedIndexes(t, r.Dir))
	}
	indexMatchesHead(t, r.Dir)

	// A person stages a file and unstages a tracked one (git writes the
	// split index itself); memfsd's next write keeps both.
	writeFile(t, r.Dir, "staged.md", "staged by a person\n")
	git(t, r.Dir, "add", "staged.md")
	git(t, r.Dir, "rm", "-q", "--cached", "notes/n0001.md")
	commitN(t, r, 200, 1)
	if got := git(t, r.Dir, "diff", "--cached", "--name-status"); got != "D\tnotes/n0001.md\nA\tstaged.md" {
		t.Fatalf("staged after memfsd's write: %q", got)
	}
	git(t, r.Dir, "commit", "-q", "-m", "a person's commit")
	git(t, r.Dir, "add", "notes/n0001.md")
	git(t, r.Dir, "commit", "-q", "-m", "back")
	commitN(t, r, 201, 1)
	indexMatchesHead(t, r.Dir)

	// git's own split index, over its own shared index.
	git(t, r.Dir, "config", "core.splitIndex", "true")
	git(t, r.Dir, "update-index", "--split-index")
	commitN(t, r, 300, 2)
	indexMatchesHead(t, r.Dir)

	// Changes past 20% of the shared index start a new one.
	before := len(sharedIndexes(t, r.Dir))
	commitN(t, r, 400, 15)
	if !indexIsSplit(t, r.Dir) || len(sharedIndexes(t, r.Dir)) <= before {
		t.Fatalf("no new shared index after 15 changes: %v", sharedIndexes(t, r.Dir))
	}
	if _, err := os.Stat(first); err != nil {
		t.Fatalf("the first shared index went before its expiry: %v", err)
	}
	indexMatchesHead(t, r.Dir)

	// Bitmaps past their first 64-bit word: a shared index of ~150
	// entries, an entry near its end replaced and one deleted.
	commitN(t, r, 600, 100)
	writeFile(t, r.Dir, "notes/n0690.md", "changed late\n")
	os.Remove(filepath.Join(r.Dir, "notes/n0650.md"))
	if _, err := r.CommitWrite([]string{"notes/n0690.md", "notes/n0650.md"}, "memory: two late"); err != nil {
		t.Fatal(err)
	}
	indexMatchesHead(t, r.Dir)

	// core.splitIndex = false: memfsd writes the whole index.
	git(t, r.Dir, "config", "core.splitIndex", "false")
	r.Close()
	r2, err := gitmem.Open(r.Dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	commitN(t, r2, 500, 1)
	if indexIsSplit(t, r.Dir) {
		t.Fatal("a split index although core.splitIndex is false")
	}
	indexMatchesHead(t, r.Dir)
	git(t, r.Dir, "fsck", "--strict")
}

// The shared index .git/index links to is kept fresh (git removes shared
// indexes untouched for two weeks, memfsd those untouched for a day) and is
// never removed while linked; one removed anyway is replaced at the next
// write, and an index whose shared index is lost is rebuilt from HEAD.
func TestRepo_SharedIndexLifetime(t *testing.T) {
	defer gitmem.SetSplitMinEntries(40)()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "shared-life")
	past := time.Now().Add(-time.Hour)
	n := 0
	write := func(t *testing.T, r *gitmem.Repo, count int) {
		t.Helper()
		for i := 0; i < count; i++ {
			p := fmt.Sprintf("notes/n%04d.md", n)
			n++
			writeFile(t, r.Dir, p, fmt.Sprintf("note %d\n", n))
			os.Chtimes(filepath.Join(r.Dir, p), past, past)
			if _, err := r.CommitWrite([]string{p}, "memory: create "+p); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(t, r, 42)
	shared := sharedIndexes(t, r.Dir)
	if len(shared) != 1 || !indexIsSplit(t, r.Dir) {
		t.Fatalf("no split index: %v", shared)
	}
	// Two days untouched, and a stray stale one beside it.
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(shared[0], old, old)
	stray := filepath.Join(r.GitDir, "sharedindex."+strings.Repeat("ab", 20))
	os.WriteFile(stray, []byte("stale"), 0o644)
	os.Chtimes(stray, old, old)
	write(t, r, 1)
	if fi, err := os.Stat(shared[0]); err != nil || time.Since(fi.ModTime()) > time.Minute {
		t.Fatalf("the linked shared index was not kept fresh: %v %v", fi.ModTime(), err)
	}
	// Past 20 % of changes: a new shared index; the one just linked stays,
	// the stray stale one goes.
	write(t, r, 15)
	if got := sharedIndexes(t, r.Dir); len(got) != 2 {
		t.Fatalf("shared indexes after the rotation: %v", got)
	}
	if _, err := os.Stat(shared[0]); err != nil {
		t.Fatalf("the shared index linked until this write went: %v", err)
	}
	indexMatchesHead(t, r.Dir)

	// Someone removes the shared indexes: the next write (with the index
	// still cached) links to a new one, which git reads.
	for _, p := range sharedIndexes(t, r.Dir) {
		os.Remove(p)
	}
	write(t, r, 1)
	indexMatchesHead(t, r.Dir)
	write(t, r, 1)
	indexMatchesHead(t, r.Dir)

	// And with nothing cached (a restart): the index is rebuilt from HEAD.
	for _, p := range sharedIndexes(t, r.Dir) {
		os.Remove(p)
	}
	r.Close()
	r2, err := gitmem.Open(r.Dir, gitmem.Remote{}, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := r2.Status(); err != nil {
		t.Fatalf("status with the shared index lost: %v", err)
	}
	write(t, r2, 1)
	indexMatchesHead(t, r.Dir)
	git(t, r.Dir, "fsck", "--strict")
}

// git's own split index with long runs in its bitmaps (290 consecutive
// shared entries deleted: EWAH run words, not only literals) is read
// right: memfsd's next write keeps exactly the person's staged deletions.
func TestRepo_ReadsGitSplitIndexRuns(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "runs")
	for i := 0; i < 300; i++ {
		writeFile(t, r.Dir, fmt.Sprintf("notes/n%04d.md", i), fmt.Sprintf("note %d\n", i))
	}
	git(t, r.Dir, "add", "notes")
	git(t, r.Dir, "commit", "-q", "-m", "300 notes")
	git(t, r.Dir, "config", "core.splitIndex", "true")
	git(t, r.Dir, "update-index", "--split-index")
	var gone []string
	for i := 5; i < 295; i++ {
		gone = append(gone, fmt.Sprintf("notes/n%04d.md", i))
	}
	git(t, r.Dir, append([]string{"rm", "-q", "--cached", "--"}, gone...)...)
	if !indexIsSplit(t, r.Dir) {
		t.Fatal("git did not write a split index")
	}
	writeFile(t, r.Dir, "mine.md", "memfsd's\n")
	if _, err := r.CommitWrite([]string{"mine.md"}, "memory: create mine.md"); err != nil {
		t.Fatal(err)
	}
	staged := git(t, r.Dir, "diff", "--cached", "--name-only", "--diff-filter=D")
	if staged != strings.Join(gone, "\n") {
		t.Fatalf("staged deletions after memfsd's write: %d lines, want %d", len(strings.Split(staged, "\n")), len(gone))
	}
	if got := git(t, r.Dir, "ls-files"); len(strings.Split(got, "\n")) != 300-len(gone)+1 || !strings.Contains(got, "mine.md") {
		t.Fatalf("ls-files after memfsd's write:\n%s", got)
	}
	git(t, r.Dir, "cat-file", "-e", "HEAD:mine.md")
}
