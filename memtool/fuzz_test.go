package memtool_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/memtool"
)

// FuzzResolve: whatever path the model sends, a create either fails or
// lands inside the memory folder and outside .git.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"/memories/a.md", "/memories/../x", "/memories/%2e%2e%2fx", "/memories/..\\x", "/memoriesX/a",
		"/memories_backup/a", "/memories/.git/config", "/memories/a/../../x", "/memories/link/x",
		"/memories/./.git/HEAD", "/memories/a/./../.GiT/x", "/memories/\x00", "/memories/%2F", "/memories//../x",
	} {
		f.Add(s)
	}
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, p string) {
		dir := filepath.Join(base, "memory")
		os.RemoveAll(base)
		os.MkdirAll(filepath.Join(dir, ".git"), 0o700)
		os.MkdirAll(filepath.Join(base, "outside"), 0o700)
		os.Symlink(filepath.Join(base, "outside"), filepath.Join(dir, "link"))
		os.Symlink(filepath.Join(dir, ".git"), filepath.Join(dir, "gitlink"))
		tool := &memtool.Tool{Dir: dir}
		res := tool.Run(memtool.Input{Command: "create", Path: p, FileText: ptr("fuzz")})
		if entries, _ := os.ReadDir(filepath.Join(base, "outside")); len(entries) > 0 {
			t.Fatalf("path %q wrote outside: %v (%s)", p, entries, res.Content)
		}
		// memfsd's own temporary folder (.git/memfsd/tmp) may be made;
		// nothing may be left in it, and nothing else written in .git.
		if entries, _ := os.ReadDir(filepath.Join(dir, ".git")); len(entries) > 1 || len(entries) == 1 && entries[0].Name() != "memfsd" {
			t.Fatalf("path %q wrote into .git (%s)", p, res.Content)
		}
		if entries, _ := os.ReadDir(filepath.Join(dir, ".git", "memfsd", "tmp")); len(entries) > 0 {
			t.Fatalf("path %q left a temporary file in .git/memfsd/tmp (%s)", p, res.Content)
		}
		if entries, _ := os.ReadDir(base); len(entries) > 2 {
			t.Fatalf("path %q wrote beside the memory folder: %v", p, entries)
		}
		if !res.IsError && !strings.HasPrefix(p, "/memories/") {
			t.Fatalf("path %q accepted", p)
		}
	})
}

func ptr(s string) *string { return &s }
