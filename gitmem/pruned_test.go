package gitmem_test

import (
	"context"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// A person (or the agent, with a shell) throws away memfsd's unpushed
// commits and prunes their objects between two memfsd writes in one
// process: `git reset --hard <older>`, `git reflog expire --expire=now
// --all`, then `git gc --prune=now` (objects packed) or `git prune
// --expire=now` (loose objects only). memfsd then writes the same
// content again: the blob and its folder's tree must be written again,
// not taken for present from memfsd's cache, or the commit names missing
// objects and every later push fails.
func TestRepo_PrunedObjectWrittenAgain(t *testing.T) {
	t.Parallel()
	const content = "the same note, written twice\n"
	for _, tc := range []struct {
		name string
		// put makes content an object before memfsd commits it; prune
		// removes what is unreachable.
		put   func(t *testing.T, dir string)
		prune []string
		trees bool // the prune takes the trees too (git prune leaves packs)
	}{
		{"GCPruneNow", func(t *testing.T, dir string) {}, []string{"gc", "-q", "--prune=now"}, true},
		{"PruneLoose", func(t *testing.T, dir string) {
			// A person's git stages the same bytes first: a loose blob
			// memfsd then finds instead of writing its own.
			writeFile(t, dir, "notes/x.md", content)
			git(t, dir, "add", "notes/x.md")
		}, []string{"prune", "--expire=now"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := gitserver.New(t, testToken)
			r := mustClone(t, srv, "pruned")
			writeFile(t, r.Dir, "base.md", "pushed\n")
			if _, err := r.CommitWrite([]string{"base.md"}, "memory: create base.md"); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Push(context.Background()); err != nil {
				t.Fatal(err)
			}
			older := git(t, r.Dir, "rev-parse", "HEAD")

			tc.put(t, r.Dir)
			writeFile(t, r.Dir, "notes/x.md", content)
			if _, err := r.CommitWrite([]string{"notes/x.md"}, "memory: create notes/x.md"); err != nil {
				t.Fatal(err)
			}
			blob := git(t, r.Dir, "rev-parse", "HEAD:notes/x.md")
			tree := git(t, r.Dir, "rev-parse", "HEAD:notes")

			git(t, r.Dir, "reset", "-q", "--hard", older)
			git(t, r.Dir, "reflog", "expire", "--expire=now", "--all")
			git(t, r.Dir, tc.prune...)
			gone := []string{blob}
			if tc.trees {
				gone = append(gone, tree)
			}
			for _, h := range gone {
				if _, err := gitErr(r.Dir, "cat-file", "-e", h); err == nil {
					t.Fatalf("%s survived the prune: the test proves nothing", h)
				}
			}

			writeFile(t, r.Dir, "notes/x.md", content)
			if _, err := r.CommitWrite([]string{"notes/x.md"}, "memory: create notes/x.md again"); err != nil {
				t.Fatalf("commit after the prune: %v", err)
			}
			git(t, r.Dir, "fsck", "--strict")
			if _, err := r.Push(context.Background()); err != nil {
				t.Fatalf("push after the prune: %v", err)
			}
			checkClean(t, r.Dir)
			git(t, srv.RepoDir("pruned"), "fsck", "--strict")
			if got := git(t, srv.RepoDir("pruned"), "cat-file", "-p", "main:notes/x.md"); got+"\n" != content {
				t.Fatalf("the server's notes/x.md: %q", got)
			}
		})
	}
}
