package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Walls, third pass (issue 38): every byte the agent controls is bounded
// before it is held.

// hasProblem reports whether id's status names path with cause.
func (p *proc) hasProblem(id, path, cause string) bool {
	return slices.Contains(p.writeProblems(id), writeProblem{Path: path, Cause: cause})
}

// A sparse 1 TB file in agent a's folder costs no disk. Before, the
// direct-write pipeline read it whole (the work tree allocated st_size up
// front) and the runtime died with "fatal error: out of memory", taking
// agent b with it; the start-up scan read it again. Now both files (one
// made by the shell's truncate, one by os.Truncate) are held as too_large
// without being read, b's writes reach its remote, the daemon's RSS stays
// small, and a restart (the start-up scan) holds them the same.
func TestWalls_SparseFileHeldTooLarge(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	args := []string{"--agent", "a", "--agent", "b"}
	p := startDaemon(t, srv, home, args...)
	dir := memDir(home, "a")
	if out, err := exec.Command("sh", "-c", "cd "+dir+" && : > shell.md && truncate -s 1T shell.md").CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.md"), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "go.md"), 1<<40); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fine.md"), []byte("a fine note\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "both sparse files held too_large", func() bool {
		return p.cmd.ProcessState == nil && p.hasProblem("a", "shell.md", "too_large") && p.hasProblem("a", "go.md", "too_large")
	})
	waitFor(t, 30*time.Second, "fine.md committed beside them", func() bool {
		_, err := gitTry(dir, "cat-file", "-e", "HEAD:fine.md")
		return err == nil
	})
	p.kickTurn(t, "a")
	p.writeAndPush(t, srv, "b", "b.md", "b goes on\n")
	p.answersInTime(t, "a", "b")
	if rss := rssMiB(p.cmd.Process.Pid); rss > 512 {
		t.Errorf("daemon RSS %d MiB with two sparse 1 TB files, want under 512", rss)
	}
	for _, name := range []string{"shell.md", "go.md"} {
		if _, err := gitTry(dir, "cat-file", "-e", "HEAD:"+name); err == nil {
			t.Errorf("%s was committed", name)
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() != 1<<40 {
			t.Errorf("%s not kept in the folder as it was: %v %v", name, fi, err)
		}
	}

	// The start-up scan of a fresh daemon over the same folder.
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p = startDaemon(t, srv, home, args...)
	waitFor(t, 30*time.Second, "both sparse files held too_large after a restart", func() bool {
		return p.cmd.ProcessState == nil && p.hasProblem("a", "shell.md", "too_large") && p.hasProblem("a", "go.md", "too_large")
	})
	p.writeAndPush(t, srv, "b", "b2.md", "b goes on after the restart\n")
	p.answersInTime(t, "a", "b")
	if rss := rssMiB(p.cmd.Process.Pid); rss > 512 {
		t.Errorf("daemon RSS %d MiB after the start-up scan, want under 512", rss)
	}
}
