package gitmem_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

// TestRepo_CoexistsWithGitCLI writes 200 commits with CommitWrite while the
// git CLI makes 200 of its own in the same folder. A CLI commit refused
// because our lock is held is fine; a commit that reported success and is
// not reachable afterwards is a loss.
func TestRepo_CoexistsWithGitCLI(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "co")
	n := soak.Int(60, 200) // each side's commits
	var wg sync.WaitGroup
	var ours []string
	var oursErr error
	var cliOK []string
	cliRefused := 0
	lastRefusal := ""
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("mem/m%03d.md", i)
			writeFile(t, r.Dir, p, fmt.Sprintf("memfsd write %d\n", i))
			h, err := r.CommitWrite([]string{p}, "memory: create "+p)
			if err != nil {
				oursErr = fmt.Errorf("CommitWrite %d: %w", i, err)
				return
			}
			ours = append(ours, h.String())
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("cli/c%03d.md", i)
			writeFile(t, r.Dir, p, fmt.Sprintf("cli write %d\n", i))
			msg := fmt.Sprintf("cli commit %d", i)
			// A person retries a refused command a few times, as git's
			// message suggests; what still fails is counted as refused.
			ok := false
			for attempt := 0; attempt < 20 && !ok; attempt++ {
				if out, err := gitErr(r.Dir, "add", "--", p); err != nil {
					lastRefusal = out
					time.Sleep(time.Millisecond)
					continue
				}
				if out, err := gitErr(r.Dir, "commit", "-q", "-m", msg, "--", p); err != nil {
					lastRefusal = out
					time.Sleep(time.Millisecond)
					continue
				}
				ok = true
			}
			if !ok {
				cliRefused++
				continue
			}
			cliOK = append(cliOK, msg)
		}
	}()
	wg.Wait()
	if oursErr != nil {
		t.Fatal(oursErr)
	}
	git(t, r.Dir, "fsck", "--strict")
	for _, h := range ours {
		if _, err := gitErr(r.Dir, "merge-base", "--is-ancestor", h, "HEAD"); err != nil {
			t.Errorf("memfsd commit %s lost", h[:8])
		}
	}
	subjects := git(t, r.Dir, "log", "--format=%s")
	for _, msg := range cliOK {
		if !strings.Contains(subjects, msg+"\n") && !strings.HasSuffix(subjects, msg) {
			t.Errorf("CLI commit %q lost", msg)
		}
	}
	// Every memfsd file is in HEAD; the index agrees with HEAD for them.
	files := git(t, r.Dir, "ls-tree", "-r", "--name-only", "HEAD", "mem")
	if c := strings.Count(files, "\n") + 1; c != n {
		t.Errorf("HEAD has %d memfsd files, want %d", c, n)
	}
	if got := git(t, r.Dir, "diff", "--cached", "--name-only", "HEAD", "--", "mem"); got != "" {
		t.Errorf("index differs from HEAD for memfsd files: %s", got)
	}
	t.Logf("memfsd commits %d, CLI commits %d, CLI refused %d (last: %.80s)", len(ours), len(cliOK), cliRefused, lastRefusal)
	if len(cliOK) == 0 {
		t.Fatal("no CLI commit got through: the test proves nothing")
	}
}

// TestRepo_SurvivesGitGC: a person's `git gc` packs our loose objects and
// removes their fanout folders; later writes, pushes and fetches go on.
func TestRepo_SurvivesGitGC(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "gc")
	for i := 0; i < 20; i++ {
		p := fmt.Sprintf("n%02d.md", i)
		writeFile(t, r.Dir, p, fmt.Sprintf("note %d\n", i))
		if _, err := r.CommitWrite([]string{p}, "memory: create "+p); err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			git(t, r.Dir, "gc", "-q", "--prune=now")
		}
	}
	if _, err := r.Push(context.Background()); err != nil {
		t.Fatalf("push after gc: %v", err)
	}
	writeFile(t, r.Dir, "n00.md", "changed after gc\n")
	if _, err := r.CommitWrite([]string{"n00.md"}, "memory: update n00.md"); err != nil {
		t.Fatalf("commit after gc: %v", err)
	}
	if _, err := r.Push(context.Background()); err != nil {
		t.Fatalf("second push after gc: %v", err)
	}
	checkClean(t, r.Dir)
	git(t, srv.RepoDir("gc"), "fsck", "--strict")
}
