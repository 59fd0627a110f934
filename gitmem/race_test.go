package gitmem_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// restoreRO is a guard that undoes every change to ro.md.
func restoreRO(b *gitmem.Batch) ([]gitmem.Verdict, error) {
	out := make([]gitmem.Verdict, len(b.Views))
	for i, v := range b.Views {
		if v.Path == "ro.md" {
			out[i] = gitmem.Restore
		}
	}
	return out, nil
}

// TestCommit_GuardRacingDirectWrites: the guard and the commit are one
// step, so a write landing while a read-only file is being restored is never
// committed, and the writer's last bytes are kept.
func TestCommit_GuardRacingDirectWrites(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "ro")
	writeFile(t, r.Dir, "ro.md", "orig\n")
	if _, err := r.CommitWrite([]string{"ro.md"}, "init"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var kept [][]byte
	keep := func(_ string, b []byte) error {
		mu.Lock()
		kept = append(kept, append([]byte(nil), b...))
		mu.Unlock()
		return nil
	}
	var stop atomic.Bool
	var last atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			s := fmt.Sprintf("evil %d\n", i)
			// Write-temp-then-rename, as an editor does: always whole.
			tmp := filepath.Join(r.Dir, "ro.md.swp")
			os.WriteFile(tmp, []byte(s), 0o600)
			os.Rename(tmp, filepath.Join(r.Dir, "ro.md"))
			last.Store(s)
		}
	}()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if _, err := r.Commit(gitmem.CommitRequest{Paths: []string{"ro.md"}, Guard: restoreRO, Keep: keep,
			Message: func(v gitmem.PathView) string { return "memory: " + v.Kind + " " + v.Path }}); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	<-done
	res, err := r.Commit(gitmem.CommitRequest{Paths: []string{"ro.md"}, Guard: restoreRO, Keep: keep,
		Message: func(v gitmem.PathView) string { return "x" }})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(git(t, r.Dir, "log", "--format=%H", "--", "ro.md"), "\n") + 1; n != 1 {
		t.Fatalf("ro.md changed in %d commits, want only its first", n)
	}
	if data, _ := os.ReadFile(filepath.Join(r.Dir, "ro.md")); string(data) != "orig\n" {
		t.Fatalf("work tree ro.md = %q after the last restore (%+v)", data, res)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, k := range kept {
		found = found || bytes.Equal(k, []byte(last.Load().(string)))
	}
	if !found {
		t.Fatalf("the writer's last bytes %q were not kept (%d kept)", last.Load(), len(kept))
	}
	t.Logf("%d rejected versions kept", len(kept))
	git(t, r.Dir, "fsck", "--strict")
}

// TestPull_AgentWritesWhileFilesAreReplaced: an agent writing files while
// pulls replace those same files (many per pull) never loses a write: each
// file ends with the agent's last bytes.
func TestPull_AgentWritesWhileFilesAreReplaced(t *testing.T) {
	t.Parallel()
	const files = 200
	srv := gitserver.New(t, testToken)
	peer := cliClone(t, srv, "pull")
	git(t, peer, "checkout", "-q", "-b", "main")
	writeAll := func(round int) {
		for i := 0; i < files; i++ {
			writeFile(t, peer, fmt.Sprintf("f%03d.md", i), fmt.Sprintf("remote round %d\n", round))
		}
		git(t, peer, "add", "-A")
		git(t, peer, "commit", "-q", "-m", fmt.Sprintf("round %d", round))
		git(t, peer, "push", "-q", "origin", "main")
	}
	writeAll(0)
	r := mustClone(t, srv, "pull")

	var stop atomic.Bool
	lastWrite := make([]string, files)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; !stop.Load(); n++ {
			i := (n * 7) % files
			s := fmt.Sprintf("agent write %d\n", n)
			// Whole-file writes (temp + rename, as the memory tool and
			// editors do): a write in flight through an open descriptor
			// at the instant of a replacement is the one window left, as
			// with git checkout.
			tmp := filepath.Join(r.Dir, ".agent-tmp")
			os.WriteFile(tmp, []byte(s), 0o600)
			os.Rename(tmp, filepath.Join(r.Dir, fmt.Sprintf("f%03d.md", i)))
			lastWrite[i] = s
		}
	}()
	ctx := context.Background()
	for round := 1; round <= 8; round++ {
		writeAll(round)
		if _, err := r.Pull(ctx); err != nil {
			t.Fatalf("pull %d: %v", round, err)
		}
	}
	stop.Store(true)
	<-done
	lost := 0
	for i, want := range lastWrite {
		if want == "" {
			continue
		}
		got, _ := os.ReadFile(filepath.Join(r.Dir, fmt.Sprintf("f%03d.md", i)))
		if string(got) != want {
			lost++
			t.Errorf("f%03d.md = %q, the agent's last write was %q", i, got, want)
		}
	}
	if lost == 0 && strings.TrimSpace(git(t, r.Dir, "status", "--porcelain")) == "" {
		t.Fatal("no agent write survived as a change: the test did not race")
	}
	git(t, r.Dir, "fsck", "--strict")
}

// TestPull_FolderBecomesFile: the remote puts a file where the agent has a
// folder of uncommitted files (and a folder where it has a changed file):
// nothing of the agent's is deleted; it moves aside as a conflict copy.
func TestPull_FolderBecomesFile(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	peer := cliClone(t, srv, "swap")
	git(t, peer, "checkout", "-q", "-b", "main")
	writeFile(t, peer, "plan", "a file called plan\n")
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "seed")
	git(t, peer, "push", "-q", "origin", "main")
	r := mustClone(t, srv, "swap")
	writeFile(t, r.Dir, "notes/x.md", "the agent's uncommitted note\n") // a folder the remote will turn into a file
	writeFile(t, r.Dir, "plan", "the agent changed plan\n")             // a file the remote will turn into a folder

	os.Remove(filepath.Join(peer, "plan"))
	writeFile(t, peer, "plan/step1.md", "step one\n")
	writeFile(t, peer, "notes", "notes is a file now\n")
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "swap")
	git(t, peer, "push", "-q", "origin", "main")
	if _, err := r.Pull(context.Background()); err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	filepath.Walk(r.Dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && !strings.Contains(p, "/.git/") {
			data, _ := os.ReadFile(p)
			found[string(data)] = p
		}
		return nil
	})
	for _, want := range []string{"the agent's uncommitted note\n", "the agent changed plan\n", "notes is a file now\n", "step one\n"} {
		if _, ok := found[want]; !ok {
			t.Errorf("%q is gone from the work tree (have %v)", want, found)
		}
	}
	git(t, r.Dir, "fsck", "--strict")
}
