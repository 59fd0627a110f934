package main_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

// homeSnapshot is every file under the agent's home (memfsd's own folder,
// <home>/agents/<id>) outside its memory folder, with its bytes.
func homeSnapshot(t *testing.T, agentHome string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(agentHome, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(agentHome, p)
		if rel == "memory" {
			return filepath.SkipDir
		}
		if d.IsDir() || rel == "." {
			return nil
		}
		data, _ := os.ReadFile(p)
		out[rel] = string(data)
		return nil
	})
	return out
}

// TestTool_SymlinkSwapThroughTheDaemon: the agent's shell, a separate
// process, swaps its folder notes/ with a link to memfsd's own home for the
// agent (<home>/agents/<id>, where memfsd keeps its records) as fast as it
// can for 10 s, while the memory tool is called over the daemon's API in a
// loop on /memories/notes/. Nothing is created, changed or removed in that
// home but memfsd's own records, no answer and no commit holds the bytes
// of a file there, and git fsck --strict passes on both repositories.
func TestTool_SymlinkSwapThroughTheDaemon(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "swp")
	dir := memDir(home, "swp")
	agentHome := filepath.Join(home, "agents", "swp")

	type answer struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	tool := func(in map[string]any) answer {
		body, _ := json.Marshal(in)
		var out answer
		if code, err := p.call("POST", "/v1/agents/swp/memory", string(body), &out); err != nil || code != 200 {
			t.Fatalf("memory call %s: %d %v", body, code, err)
		}
		return out
	}
	for name, content := range map[string]string{
		"secret.md": "inside secret\n", "edit.md": "inside edit alpha\n", "victim.md": "inside victim\n", "mv.md": "inside mv\n",
	} {
		if res := tool(map[string]any{"command": "create", "path": "/memories/notes/" + name, "file_text": content}); res.IsError {
			t.Fatal(res.Content)
		}
	}
	// Decoys in memfsd's home, named as the files the tool works on.
	for name, content := range map[string]string{
		"secret.md": "OUTSIDE SECRET\n", "edit.md": "OUTSIDE edit alpha\n", "victim.md": "OUTSIDE victim\n",
		"mv.md": "OUTSIDE mv\n", "OUTSIDE-only.md": "OUTSIDE\n",
	} {
		os.WriteFile(filepath.Join(agentHome, name), []byte(content), 0o600)
	}
	if err := os.Symlink(agentHome, filepath.Join(dir, "swap")); err != nil {
		t.Fatal(err)
	}
	p.turn("swp")
	before := homeSnapshot(t, agentHome)

	// The agent's shell: a process of its own.
	loop := filepath.Join(t.TempDir(), "swaploop")
	if out, err := exec.Command("go", "build", "-o", loop, "./testdata/swaploop").CombinedOutput(); err != nil {
		t.Fatalf("build swaploop: %v\n%s", err, out)
	}
	shell := exec.Command(loop, filepath.Join(dir, "notes"), filepath.Join(dir, "swap"))
	var swapsOut strings.Builder
	shell.Stdout = &swapsOut
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if shell.ProcessState == nil {
			shell.Process.Kill()
			shell.Wait()
		}
	})

	var calls, refused, leaked int
	var leakedSample string
	// 4 s in the suite (the shell's loop takes a CPU while it runs; the
	// in-process TestTool_SymlinkSwapNeverEscapes makes thousands of calls),
	// 30 s in the walls soak.
	deadline := time.Now().Add(soak.Duration(4*time.Second, 30*time.Second))
	for i := 0; time.Now().Before(deadline); i++ {
		for _, in := range []map[string]any{
			{"command": "create", "path": fmt.Sprintf("/memories/notes/c-%d.md", i), "file_text": "created\n"},
			{"command": "str_replace", "path": "/memories/notes/edit.md", "old_str": "alpha", "new_str": "beta"},
			{"command": "str_replace", "path": "/memories/notes/edit.md", "old_str": "beta", "new_str": "alpha"},
			{"command": "insert", "path": "/memories/notes/edit.md", "insert_line": 0, "insert_text": "x"},
			{"command": "view", "path": "/memories/notes/secret.md"},
			{"command": "view", "path": "/memories/notes"},
			{"command": "view", "path": "/memories"},
			{"command": "delete", "path": "/memories/notes/victim.md"},
			{"command": "create", "path": "/memories/notes/victim.md", "file_text": "inside victim\n"},
			{"command": "rename", "old_path": "/memories/notes/mv.md", "new_path": "/memories/notes/mv2.md"},
			{"command": "rename", "old_path": "/memories/notes/mv2.md", "new_path": "/memories/notes/mv.md"},
		} {
			res := tool(in)
			calls++
			if res.IsError {
				refused++
			}
			if strings.Contains(res.Content, "OUTSIDE") || strings.Contains(res.Content, "records") {
				leaked++
				leakedSample = res.Content
			}
		}
	}
	shell.Process.Signal(syscall.SIGTERM)
	shell.Wait()
	swaps := strings.TrimSpace(swapsOut.String())
	// Put notes/ back (it may have stopped as the link), then settle.
	if fi, err := os.Lstat(filepath.Join(dir, "notes")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		syscall.Rename(filepath.Join(dir, "notes"), filepath.Join(dir, "swap.tmp"))
		syscall.Rename(filepath.Join(dir, "swap"), filepath.Join(dir, "notes"))
		syscall.Rename(filepath.Join(dir, "swap.tmp"), filepath.Join(dir, "swap"))
	}
	tr := p.turn("swp")

	after := homeSnapshot(t, agentHome)
	var created, changed, removed []string
	for name, content := range after {
		if old, ok := before[name]; !ok {
			created = append(created, name)
		} else if old != content && !strings.HasPrefix(name, "records/") && name != "memfsd.sock" {
			changed = append(changed, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok && !strings.HasPrefix(name, "records/") {
			removed = append(removed, name)
		}
	}
	slices.Sort(created)
	t.Logf("%d calls (%d refused), %s swaps by the shell; in memfsd's home: new %v, changed %v, removed %v; %d answers with outside bytes; turn %s",
		calls, refused, swaps, created, changed, removed, leaked, tr.Outcome)
	if n, _ := fmt.Sscan(swaps, new(int)); n != 1 || swaps == "0" {
		t.Fatalf("the shell swapped %q times: the race was not run", swaps)
	}
	for _, name := range created {
		if !strings.HasPrefix(name, "records/") {
			t.Errorf("%s was made in memfsd's home, outside the memory folder", name)
		}
	}
	if len(changed)+len(removed) > 0 {
		t.Errorf("files in memfsd's home changed %v or removed %v", changed, removed)
	}
	if leaked > 0 {
		t.Errorf("%d answers held bytes or names from memfsd's home, e.g. %q", leaked, leakedSample)
	}
	for _, repo := range []string{dir, srv.RepoDir("swp")} {
		if out, err := gitTry(repo, "log", "-p", "--all", "--format=%H"); err != nil || strings.Contains(out, "OUTSIDE") {
			t.Errorf("history of %s holds bytes from memfsd's home (or log failed: %v)", repo, err)
		}
		waitRepackIdle(t, repo)
		if out, err := gitTry(repo, "fsck", "--strict"); err != nil {
			t.Errorf("git fsck --strict %s: %v\n%s", repo, err, out)
		}
	}
}
