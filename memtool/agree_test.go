package memtool_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTool_RefusesWhatTheScanSkips: the memory tool and the scan apply the
// one rule (worktree.Check): every path the scan skips as untrackable, the
// tool refuses with its .git answer and writes nothing; every name next to
// them that git tracks, the tool writes and the scan commits.
func TestTool_RefusesWhatTheScanSkips(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	untrackable := []string{".GIT", "Deep/x/.Git", "sub/.git", "w/.git.", "w/GIT~1", "h/.g\u200cit"}
	trackable := []string{".github/a.md", ".gitignore", "..md", "w/git~2", "x.git"}
	for _, p := range untrackable {
		for _, path := range []string{"/memories/" + p, "/memories/" + p + "/config"} {
			js := `{"command":"create","path":` + jsonString(path) + `,"file_text":"x"}`
			e.expect(js, "Path "+path+" is inside .git, which holds memory's history and is not writable or readable here", true)
		}
		if _, err := os.Lstat(filepath.Join(e.dir, filepath.FromSlash(p))); err == nil {
			t.Fatalf("the refused create of %s wrote it", p)
		}
		// Written behind the tool's back, the scan skips it.
		os.MkdirAll(filepath.Join(e.dir, filepath.Dir(filepath.FromSlash(p))), 0o700)
		os.WriteFile(filepath.Join(e.dir, filepath.FromSlash(p)), []byte("x\n"), 0o600)
	}
	for _, p := range trackable {
		if res := e.run(`{"command":"create","path":` + jsonString("/memories/"+p) + `,"file_text":"kept\n"}`); res.IsError {
			t.Fatalf("create %s: %s", p, res.Content)
		}
	}
	sc, err := e.repo.ScanWork()
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Dirty) != 0 {
		t.Fatalf("dirty after the tool's writes: %+v", sc.Dirty)
	}
	var skipped []string
	for _, s := range sc.Skipped {
		skipped = append(skipped, s.Path)
	}
	want := slices.Clone(untrackable)
	slices.Sort(want)
	if !slices.Equal(skipped, want) {
		t.Fatalf("the scan skipped %q, the tool refuses %q", skipped, want)
	}
	files, err := e.repo.TrackedFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range trackable {
		if _, ok := slices.BinarySearch(files, p); !ok {
			t.Errorf("%s not committed: %v", p, files)
		}
	}
}

// TestTool_FolderWithANestedRepository: deleting or renaming a folder that
// holds a .git (a file or a nested repository's folder) works on the
// memory files in it; a rename takes the .git along (the agent's nested
// history is not destroyed), and nothing of it is committed. Before, a
// .git file in the folder failed the command with "bad path", and a
// rename removed a nested .git folder with the old folder.
func TestTool_FolderWithANestedRepository(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"proj/a.md", "proj/deep/b.md", "gone/c.md"} {
		if res := e.run(`{"command":"create","path":"/memories/` + p + `","file_text":"x\n"}`); res.IsError {
			t.Fatal(res.Content)
		}
	}
	os.MkdirAll(filepath.Join(e.dir, "proj", ".git", "refs"), 0o700)
	os.WriteFile(filepath.Join(e.dir, "proj", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o600)
	os.WriteFile(filepath.Join(e.dir, "gone", ".git"), []byte("gitdir: ../x\n"), 0o600)

	e.expect(`{"command":"rename","old_path":"/memories/proj","new_path":"/memories/moved"}`, "Successfully renamed /memories/proj to /memories/moved", false)
	if data, err := os.ReadFile(filepath.Join(e.dir, "moved", ".git", "HEAD")); err != nil || string(data) != "ref: refs/heads/main\n" {
		t.Fatalf("the nested .git did not move with its folder: %q %v", data, err)
	}
	e.expect(`{"command":"delete","path":"/memories/gone"}`, "Successfully deleted /memories/gone", false)
	files, err := e.repo.TrackedFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(strings.ToLower(f), ".git/") || strings.HasSuffix(f, ".git") {
			t.Fatalf("%s committed", f)
		}
	}
	if !slices.Contains(files, "moved/a.md") || !slices.Contains(files, "moved/deep/b.md") || slices.Contains(files, "gone/c.md") || slices.Contains(files, "proj/a.md") {
		t.Fatalf("tracked after rename and delete: %v", files)
	}
}
