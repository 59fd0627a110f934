package gitmem

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/worktree"
)

// TestWtMode_OddModesAreNeverWhatAReadFinds: a tree entry whose mode is
// none of git's three file modes (0100664, go-git's filemode.Deprecated,
// which an agent's git can record) maps to worktree.Other, so no file read
// from the folder (Regular, Executable or Symlink) is taken for it: a pull
// deleting such an entry leaves the agent's file, as before the work tree
// took over the work files (worktree's TestPull_OtherModeIsNeverTheFileOnDisk).
func TestWtMode_OddModesAreNeverWhatAReadFinds(t *testing.T) {
	for _, m := range []filemode.FileMode{filemode.Deprecated, filemode.FileMode(0o100600)} {
		got := wtMode(m)
		for _, read := range []worktree.Mode{worktree.Regular, worktree.Executable, worktree.Symlink} {
			if got == read {
				t.Errorf("wtMode(%o) = %v, what a read of a file finds", m, got)
			}
		}
	}
	for m, want := range map[filemode.FileMode]worktree.Mode{
		filemode.Regular: worktree.Regular, filemode.Executable: worktree.Executable, filemode.Symlink: worktree.Symlink,
	} {
		if got := wtMode(m); got != want {
			t.Errorf("wtMode(%o) = %v, want %v", m, got, want)
		}
	}
}
