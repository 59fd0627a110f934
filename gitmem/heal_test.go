package gitmem_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// damagedRepo is a clone whose objects/ was put back from a copy taken
// before its last commit: HEAD names a commit, tree and blob it lacks.
func damagedRepo(t *testing.T) (*gitmem.Repo, *gitserver.Server) {
	t.Helper()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "heal")
	writeFile(t, r.Dir, "a.md", "first\n")
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: create a.md"); err != nil {
		t.Fatal(err)
	}
	objDir := filepath.Join(r.GitDir, "objects")
	saved := filepath.Join(t.TempDir(), "objects")
	if out, err := exec.Command("cp", "-a", objDir, saved).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	writeFile(t, r.Dir, "b.md", "second\n")
	if _, err := r.CommitWrite([]string{"b.md"}, "memory: create b.md"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(objDir); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", saved, objDir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return r, srv
}

func TestConfirmDamage_MissingObjectsConfirmed(t *testing.T) {
	r, _ := damagedRepo(t)
	head, _ := r.Head()
	dmg, err := r.ConfirmDamage(context.Background())
	if err != nil || dmg == nil {
		t.Fatalf("ConfirmDamage = %v, %v; want the damage", dmg, err)
	}
	if dmg.Missing[0] != head || !errors.Is(dmg, gitmem.ErrObjectsMissing) {
		t.Fatalf("damage %v: want HEAD's commit %s first", dmg, head)
	}
}

// A miss that is gone by the second look (objects moving under a reader,
// as during a repack) is not damage: nothing is rebuilt.
func TestConfirmDamage_TransientMissNotConfirmed(t *testing.T) {
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "transient")
	writeFile(t, r.Dir, "a.md", "first\n")
	if _, err := r.CommitWrite([]string{"a.md"}, "memory: create a.md"); err != nil {
		t.Fatal(err)
	}
	objDir := filepath.Join(r.GitDir, "objects")
	away := filepath.Join(r.GitDir, "objects-away")
	if err := os.Rename(objDir, away); err != nil {
		t.Fatal(err)
	}
	looked := false
	gitmem.SetBetweenLooks(r, func() {
		looked = true // the first look saw everything missing
		if err := os.Rename(away, objDir); err != nil {
			t.Error(err)
		}
	})
	dmg, err := r.ConfirmDamage(context.Background())
	if err != nil || dmg != nil || !looked {
		t.Fatalf("ConfirmDamage = %v, %v (second look taken: %v); want nothing confirmed", dmg, err, looked)
	}
}

// While a git gc of another process holds gc.pid (or memfsd's own repack
// runs), nothing is confirmed: the objects may be moving.
func TestConfirmDamage_NotWhileGCRuns(t *testing.T) {
	r, _ := damagedRepo(t)
	host, _ := os.Hostname()
	if err := os.WriteFile(filepath.Join(r.GitDir, "gc.pid"), fmt.Appendf(nil, "%d %s", os.Getppid(), host), 0o644); err != nil {
		t.Fatal(err)
	}
	dmg, err := r.ConfirmDamage(context.Background())
	if !errors.Is(err, gitmem.ErrGCRunning) || dmg != nil {
		t.Fatalf("ConfirmDamage with a gc running = %v, %v; want ErrGCRunning", dmg, err)
	}
	os.Remove(filepath.Join(r.GitDir, "gc.pid"))
	if dmg, err := r.ConfirmDamage(context.Background()); err != nil || dmg == nil {
		t.Fatalf("ConfirmDamage once the gc ended = %v, %v; want the damage", dmg, err)
	}
}

// A rebuild keeps the old .git aside and every work-tree file, and the
// new repository is whole.
func TestRebuild_KeepsOldGitAndFiles(t *testing.T) {
	r, srv := damagedRepo(t)
	head, _ := r.Head()
	writeFile(t, r.Dir, "c.md", "uncommitted\n")
	rb, err := gitmem.PrepareRebuild(context.Background(), r.Dir, remoteFor(srv, "heal"), gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(filepath.Dir(r.Dir), "broken-git-test")
	nr, err := rb.Swap(r, aside)
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	if got, _ := os.ReadFile(filepath.Join(aside, "refs", "heads", "main")); string(got) != head.String()+"\n" {
		t.Errorf("old .git's main = %q, want %s", got, head)
	}
	if dmg, err := nr.ConfirmDamage(context.Background()); err != nil || dmg != nil {
		t.Errorf("rebuilt repository: %v, %v; want whole", dmg, err)
	}
	for name, text := range map[string]string{"a.md": "first\n", "b.md": "second\n", "c.md": "uncommitted\n"} {
		if got, err := os.ReadFile(filepath.Join(r.Dir, name)); err != nil || string(got) != text {
			t.Errorf("%s = %q, %v; want %q", name, got, err, text)
		}
	}
	if out, err := gitErr(r.Dir, "fsck", "--strict"); err != nil {
		t.Errorf("fsck: %s", out)
	}
}

// ConfirmDamage waits for memfsd's own repack of the repository (which
// removes loose objects once they are packed) before it looks.
func TestConfirmDamage_WaitsForOurRepack(t *testing.T) {
	r, _ := damagedRepo(t)
	release := gitmem.HoldRepack(r)
	done := make(chan error, 1)
	go func() {
		_, err := r.ConfirmDamage(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		release()
		t.Fatalf("ConfirmDamage returned (%v) while a repack ran", err)
	case <-time.After(500 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("ConfirmDamage after the repack: %v", err)
	}
}

// A .git another memfsd process has open (a one-shot sync beside the
// daemon) is not swapped under it.
func TestRebuild_NotWhileAnotherProcessHasItOpen(t *testing.T) {
	r, srv := damagedRepo(t)
	remote := remoteFor(srv, "heal")
	other, err := gitmem.Open(r.Dir, remote, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := gitmem.PrepareRebuild(context.Background(), r.Dir, remote, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(filepath.Dir(r.Dir), "broken-git-test")
	if _, err := rb.Swap(r, aside); !errors.Is(err, gitmem.ErrRepoInUse) {
		t.Fatalf("Swap with another user = %v, want ErrRepoInUse", err)
	}
	if _, err := os.Stat(aside); !os.IsNotExist(err) {
		t.Fatalf("the .git was moved aside under another user: %v", err)
	}
	other.Close()
	again, err := gitmem.Open(r.Dir, remote, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	if rb, err = gitmem.PrepareRebuild(context.Background(), r.Dir, remote, gitmem.Options{Author: testAuthor}); err != nil {
		t.Fatal(err)
	}
	nr, err := rb.Swap(again, aside)
	if err != nil {
		t.Fatalf("Swap once alone: %v", err)
	}
	nr.Close()
}
