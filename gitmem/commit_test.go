package gitmem_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// checkClean asserts the real git sees a consistent repo: fsck clean,
// nothing dirty, index == HEAD.
func checkClean(tb testing.TB, dir string) {
	tb.Helper()
	git(tb, dir, "fsck", "--strict", "--no-dangling")
	if got := git(tb, dir, "status", "--porcelain", "--untracked-files=all"); got != "" {
		tb.Fatalf("git status not clean:\n%s", got)
	}
	if got := git(tb, dir, "diff-index", "--cached", "HEAD"); got != "" {
		tb.Fatalf("index differs from HEAD:\n%s", got)
	}
}

func TestRepo_CommitWrite_TreeShapes(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "shapes")
	steps := []struct {
		name  string
		write map[string]string // "" = delete
	}{
		{"git's folder order", map[string]string{"e4-x.md": "a", "e4.md": "b", "e4/in.md": "c", "e40.md": "d"}},
		{"deep path", map[string]string{"a/b/c/d/e/f.md": "deep"}},
		{"update nested", map[string]string{"e4/in.md": "c2"}},
		{"delete leaves empty folders out", map[string]string{"a/b/c/d/e/f.md": ""}},
		{"file becomes folder", map[string]string{"e40.md": "", "e40.md/x.md": "now a folder"}},
		{"folder becomes file", map[string]string{"e40.md/x.md": "", "e40.md": "file again"}},
		{"unicode and spaces", map[string]string{"notes/naïve café.md": "ü", "notes/a b.md": "x"}},
		{"executable and symlink", map[string]string{"bin/run.sh": "#!/bin/sh\n", "link": "->e4.md"}},
		{"delete everything but one", map[string]string{"e4-x.md": "", "e4.md": "", "e4/in.md": "", "notes/naïve café.md": "", "notes/a b.md": "", "bin/run.sh": "", "link": "", "e40.md": ""}},
	}
	for _, st := range steps {
		var paths []string
		// Deletions first, as a person would: a file must go before a
		// folder of the same name can be made.
		order := make([]string, 0, len(st.write))
		for p := range st.write {
			order = append(order, p)
		}
		slices.SortFunc(order, func(a, b string) int {
			da, db := st.write[a] == "", st.write[b] == ""
			if da != db {
				if da {
					return -1
				}
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, p := range order {
			content := st.write[p]
			abs := filepath.Join(r.Dir, filepath.FromSlash(p))
			paths = append(paths, p)
			switch {
			case content == "":
				os.Remove(abs)
				// remove folders it leaves empty, as an editor would not, but rm -r would
				for d := filepath.Dir(abs); d != r.Dir; d = filepath.Dir(d) {
					if os.Remove(d) != nil {
						break
					}
				}
			case strings.HasPrefix(content, "->"):
				os.Symlink(content[2:], abs)
			default:
				if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
					os.RemoveAll(abs)
				}
				writeFile(t, r.Dir, p, content)
				if strings.HasSuffix(p, ".sh") {
					os.Chmod(abs, 0o755)
				}
			}
		}
		if _, err := r.CommitWrite(paths, "memory: "+st.name); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		checkClean(t, r.Dir)
	}
	if got := git(t, r.Dir, "ls-tree", "-r", "--name-only", "HEAD"); got != "system/human.md\nsystem/persona.md" && got != "" {
		// the clone of an empty remote has no blocks: only what we left
		t.Logf("tree now: %s", got)
	}
}

// TestRepo_CommitWrite_RacyGit: a same-size edit within the second of the
// last index write must still show in git status after memfsd rewrote the
// index for another file.
func TestRepo_CommitWrite_RacyGit(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "racy")
	writeFile(t, r.Dir, "a.md", "aaaa\n")
	writeFile(t, r.Dir, "b.md", "bbbb\n")
	if _, err := r.CommitWrite([]string{"a.md", "b.md"}, "memory: two"); err != nil {
		t.Fatal(err)
	}
	// Same size, same second, behind memfsd's back.
	writeFile(t, r.Dir, "a.md", "AAAA\n")
	// Let a second pass so the next index write is not itself racy.
	time.Sleep(1100 * time.Millisecond)
	writeFile(t, r.Dir, "c.md", "c\n")
	if _, err := r.CommitWrite([]string{"c.md"}, "memory: create c.md"); err != nil {
		t.Fatal(err)
	}
	if got := git(t, r.Dir, "status", "--porcelain"); got != "M a.md" {
		t.Fatalf("git status = %q, want the racy edit of a.md to show", got)
	}
	d, err := r.DirtyPaths()
	if err != nil || len(d) != 1 || d[0].Path != "a.md" {
		t.Fatalf("DirtyPaths = %v %v", d, err)
	}
}

// A commit killed between the branch's move and the index's write leaves a
// file as HEAD has it but missing from the index (git status: "D " and "??"
// for the same path; TestRepo_RepackKilled met it). The next scan puts the
// entry back: nothing for memfsd to commit, and a person's git commit would
// otherwise record the file's deletion.
func TestRepo_ScanPutsBackAnIndexEntryHEADHas(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "drift")
	writeFile(t, r.Dir, "a.md", "aaaa\n")
	writeFile(t, r.Dir, "b.md", "bbbb\n")
	if _, err := r.CommitWrite([]string{"a.md", "b.md"}, "memory: two"); err != nil {
		t.Fatal(err)
	}
	git(t, r.Dir, "update-index", "--force-remove", "a.md")
	git(t, r.Dir, "update-index", "--cacheinfo", "100644,"+git(t, r.Dir, "hash-object", "-w", "--stdin", "--path=x")+",b.md")
	if st := git(t, r.Dir, "status", "--porcelain"); !strings.Contains(st, "D  a.md") || !strings.Contains(st, "?? a.md") || !strings.Contains(st, "M b.md") {
		t.Fatalf("set-up: git status = %q", st)
	}
	d, err := r.DirtyPaths()
	if err != nil || len(d) != 0 {
		t.Fatalf("DirtyPaths = %v %v, want none (the files are as HEAD has them)", d, err)
	}
	if st := git(t, r.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after the scan = %q, want clean", st)
	}
	git(t, r.Dir, "fsck", "--strict")
}

func TestRepo_CommitWrite_RefusesBadPaths(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "bad")
	for _, p := range []string{"", "/abs", "../out", "a/../b", ".git/config", "x/.GIT/y", "./a", "a//b"} {
		if _, err := r.CommitWrite([]string{p}, "x"); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	if _, err := os.Stat(filepath.Join(r.GitDir, "index.lock")); err == nil {
		t.Fatal("a refused write left index.lock")
	}
}
