package gitmem_test

import (
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestCommit_FolderPathKeepsFilesBelowIt: a commit asked for a path that
// is a folder of tracked files (the watcher reports folders made and
// removed) records nothing for it and leaves the index entries below it
// alone. Before, the index lost every entry below the folder: git status
// showed them as staged deletions, memfsd took that for a person's
// staging and held every commit for --person-git-wait (TestLettaRules_V2
// failed 18 of 45 runs under load: project/MEMORY.md "staged").
func TestCommit_FolderPathKeepsFilesBelowIt(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "cf")
	writeFile(t, r.Dir, "project/MEMORY.md", "# Project\n")
	writeFile(t, r.Dir, "project/deep/plan.md", "plan\n")
	if _, err := r.CommitWrite([]string{"project/MEMORY.md", "project/deep/plan.md"}, "memory: create project"); err != nil {
		t.Fatal(err)
	}
	res, err := r.Commit(gitmem.CommitRequest{Paths: []string{"project", "project/deep"}, Message: func(v gitmem.PathView) string { return "memory: " + v.Kind + " " + v.Path }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Commits) != 0 {
		t.Fatalf("a commit of folders made %d commits", len(res.Commits))
	}
	if st := git(t, r.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after a commit of folder paths = %q", st)
	}
	s, err := r.PersonGit(time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if s.Any() || len(s.Staged) > 0 {
		t.Fatalf("signs of a person's git after memfsd's own commit: %+v", s)
	}
}
