package gitmem_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/procid"
	"github.com/memfsd/memfsd/worktree"
)

// TestRepo_LeftoversRecoveredAtOpen: Open recovers what a process that is
// gone left in .git/memfsd/tmp — bytes git lacks into memfsd-recovered/
// (then committed as any write), bytes git has dropped — and leaves a live
// process's temporary files alone (issue 27: leftovers were never
// recovered, committed or reported).
func TestRepo_LeftoversRecoveredAtOpen(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "agent-1")
	seed(t, r)
	dir := r.Dir
	r.Close()

	tmp := filepath.Join(dir, filepath.FromSlash(worktree.TempDir))
	os.MkdirAll(tmp, 0o700)
	gone := fmt.Sprintf("%d-1", os.Getpid()) // this pid, another start: gone
	live := procid.Self().String()
	persona, err := os.ReadFile(filepath.Join(dir, "system", "persona.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"take-" + gone + "-1": "the agent's words, in git nowhere\n",
		"w-" + gone + "-2":    string(persona), // git has it
		"w-" + gone + "-3":    "",
		"w-" + live + "-4":    "a live process's write in flight\n",
	}
	for name, data := range files {
		os.WriteFile(filepath.Join(tmp, name), []byte(data), 0o600)
	}

	r2, err := gitmem.Open(dir, remoteFor(srv, "agent-1"), gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	got, err := os.ReadFile(filepath.Join(dir, worktree.RecoveredDir, "take-"+gone+"-1"))
	if err != nil || string(got) != files["take-"+gone+"-1"] {
		t.Fatalf("recovered: %q %v", got, err)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 1 || left[0].Name() != "w-"+live+"-4" {
		t.Fatalf("left in %s: %v, want only the live process's file", worktree.TempDir, left)
	}
	if rec, _ := os.ReadDir(filepath.Join(dir, worktree.RecoveredDir)); len(rec) != 1 {
		t.Fatalf("recovered %v, want only the bytes git lacks", rec)
	}
}
