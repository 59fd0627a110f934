package memtool_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// In-tree links on the way are followed, as the reference handler does
// (it resolves the path, then checks it stays inside): relative, absolute
// and chained links to folders inside the memory folder. A link that leads
// out of it, or into .git, is still refused, and so is a read-only block
// reached through a link.
func TestTool_InTreeLinksOnTheWayFollowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(`{"command":"create","path":"/memories/notes/deep/a.md","file_text":"alpha\n"}`, "File created successfully at: /memories/notes/deep/a.md", false)
	outside := filepath.Join(filepath.Dir(e.dir), "outside")
	os.MkdirAll(outside, 0o700)
	os.Symlink("notes", filepath.Join(e.dir, "link"))                              // relative
	os.Symlink(filepath.Join(e.dir, "notes", "deep"), filepath.Join(e.dir, "abs")) // absolute, inside
	os.Symlink("../link/deep", filepath.Join(e.dir, "notes", "up"))                // a chain through link
	os.Symlink(outside, filepath.Join(e.dir, "out"))
	os.Symlink("../../outside", filepath.Join(e.dir, "notes", "esc"))
	os.Symlink(".git", filepath.Join(e.dir, "g"))
	os.Symlink("system", filepath.Join(e.dir, "sys"))

	e.expect(`{"command":"view","path":"/memories/link/deep/a.md"}`, "Here's the content of /memories/link/deep/a.md with line numbers:\n     1\talpha\n     2\t", false)
	e.expect(`{"command":"create","path":"/memories/link/file.txt","file_text":"via link\n"}`, "File created successfully at: /memories/link/file.txt", false)
	if data, err := os.ReadFile(filepath.Join(e.dir, "notes", "file.txt")); err != nil || string(data) != "via link\n" {
		t.Fatalf("notes/file.txt = %q %v, want the write where the link leads", data, err)
	}
	if files := gitLsFiles(e.dir); !strings.Contains(files, "notes/file.txt\n") || strings.Contains(files, "link/file.txt") {
		t.Fatalf("committed files:\n%s", files)
	}
	e.expect(`{"command":"str_replace","path":"/memories/abs/a.md","old_str":"alpha","new_str":"beta"}`, "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tbeta\n     2\t", false)
	e.expect(`{"command":"view","path":"/memories/notes/up/a.md"}`, "Here's the content of /memories/notes/up/a.md with line numbers:\n     1\tbeta\n     2\t", false)
	e.expect(`{"command":"rename","old_path":"/memories/link/file.txt","new_path":"/memories/abs/moved.txt"}`, "Successfully renamed /memories/link/file.txt to /memories/abs/moved.txt", false)
	if _, err := os.Stat(filepath.Join(e.dir, "notes", "deep", "moved.txt")); err != nil {
		t.Fatal(err)
	}

	escape := "Path would escape /memories directory via symlink"
	for _, js := range []string{
		`{"command":"create","path":"/memories/out/x.md","file_text":"x"}`,
		`{"command":"create","path":"/memories/notes/esc/x.md","file_text":"x"}`,
		`{"command":"create","path":"/memories/link/esc/x.md","file_text":"x"}`,
		`{"command":"view","path":"/memories/out"}`,
	} {
		e.expect(js, escape, true)
	}
	e.expect(`{"command":"view","path":"/memories/g/config"}`, "Path would reach .git via symlink", true)
	e.expect(`{"command":"str_replace","path":"/memories/sys/persona.md","old_str":"a","new_str":"b"}`, "/memories/sys/persona.md is read-only and cannot be modified", true)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("a write escaped: %v", entries)
	}
}

// The agent swaps a folder the walk followed for a link out of the memory
// folder between the tool's look and its write: the write is refused (no
// act passes a link), nothing lands outside.
func TestTool_InTreeLinkSwappedBeforeTheWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(`{"command":"create","path":"/memories/notes/a.md","file_text":"alpha\n"}`, "File created successfully at: /memories/notes/a.md", false)
	outside := filepath.Join(filepath.Dir(e.dir), "outside")
	os.MkdirAll(outside, 0o700)
	os.WriteFile(filepath.Join(outside, "a.md"), []byte("alpha\n"), 0o600)
	os.Symlink("notes", filepath.Join(e.dir, "link"))
	swapped := false
	e.tool.BeforeWrite = func() {
		if swapped {
			return
		}
		swapped = true
		if err := os.Rename(filepath.Join(e.dir, "notes"), filepath.Join(e.dir, "notes.real")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, filepath.Join(e.dir, "notes")); err != nil {
			t.Error(err)
		}
	}
	res := e.run(`{"command":"str_replace","path":"/memories/link/a.md","old_str":"alpha","new_str":"pwned"}`)
	if !swapped || !res.IsError {
		t.Fatalf("swapped %v, answer %+v: want the write refused", swapped, res)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "a.md")); string(data) != "alpha\n" {
		t.Fatalf("the write went through the swapped-in link: outside a.md = %q", data)
	}
}

func gitLsFiles(dir string) string {
	out, _ := exec.Command("git", "-C", dir, "ls-files").Output()
	return string(out)
}
