package gitmem_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// memfsd's gc.pid and git gc's exclude each other, both ways, with the
// real git CLI as the other side.
func TestRepo_GCPIDWithGitGC(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "gcpid")
	commitN(t, r, 0, 5)
	pid := filepath.Join(r.GitDir, "gc.pid")
	release, err := gitmem.TakeGCPID(r)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := gitErr(r.Dir, "gc", "-q"); err == nil || !strings.Contains(out, "already running") {
		t.Fatalf("git gc beside memfsd's repack: %v %q", err, out)
	}
	release()
	for _, p := range []string{pid, pid + ".lock"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after the release: %v", filepath.Base(p), err)
		}
	}
	git(t, r.Dir, "gc", "-q")

	// A git gc that holds gc.pid (its process still runs) keeps the repack out.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	os.WriteFile(pid, []byte(fmt.Sprintf("%d %s", sleeper.Process.Pid, host)), 0o644)
	commitN(t, r, 5, 3)
	if _, err := r.Repack(context.Background(), 1); !errors.Is(err, gitmem.ErrGCRunning) {
		t.Fatalf("repack beside a live gc: %v", err)
	}
	if data, _ := os.ReadFile(pid); !strings.HasPrefix(string(data), fmt.Sprint(sleeper.Process.Pid)) {
		t.Fatalf("the live gc's gc.pid was changed: %q", data)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	if res, err := r.Repack(context.Background(), 1); err != nil || res.Pack == "" {
		t.Fatalf("repack once that gc is gone: %+v %v", res, err)
	}
	git(t, r.Dir, "fsck", "--strict")
}

// Which gc.pid and gc.pid.lock files hold a repack off, and which are stale.
func TestRepo_GCPIDStale(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	r := mustClone(t, srv, "stale")
	pid := filepath.Join(r.GitDir, "gc.pid")
	host, _ := os.Hostname()
	old := time.Now().Add(-13 * time.Hour)
	cases := []struct {
		name    string
		pidFile string // gc.pid's content, "" for none
		pidAge  time.Time
		lock    bool // a gc.pid.lock too
		lockAge time.Time
		running bool
	}{
		// A daemon restarted with its old PID (PID 1 in a container) must
		// not take its own gc.pid from before the crash for a running gc.
		{name: "our own pid", pidFile: fmt.Sprintf("%d %s", os.Getpid(), host)},
		{name: "a process of this host that is gone", pidFile: fmt.Sprintf("%d %s", deadPID(t), host)},
		{name: "another host's gc", pidFile: fmt.Sprintf("%d other-host.example", deadPID(t)), running: true},
		{name: "another host's gc, older than 12 hours", pidFile: "1 other-host.example", pidAge: old},
		{name: "a gc taking gc.pid right now", lock: true, running: true},
		{name: "a gc.pid.lock a crash left", lock: true, lockAge: time.Now().Add(-time.Hour)},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(pid)
			os.Remove(pid + ".lock")
			if c.pidFile != "" {
				os.WriteFile(pid, []byte(c.pidFile), 0o644)
				if !c.pidAge.IsZero() {
					os.Chtimes(pid, c.pidAge, c.pidAge)
				}
			}
			if c.lock {
				os.WriteFile(pid+".lock", nil, 0o644)
				if !c.lockAge.IsZero() {
					os.Chtimes(pid+".lock", c.lockAge, c.lockAge)
				}
			}
			commitN(t, r, i*2, 2)
			res, err := r.Repack(context.Background(), 1)
			if c.running {
				if !errors.Is(err, gitmem.ErrGCRunning) {
					t.Fatalf("want ErrGCRunning, got %+v %v", res, err)
				}
				if c.pidFile != "" {
					if data, _ := os.ReadFile(pid); string(data) != c.pidFile {
						t.Fatalf("gc.pid changed to %q", data)
					}
				}
				if _, err := os.Stat(pid + ".lock"); c.lock != (err == nil) {
					t.Fatalf("gc.pid.lock: %v", err)
				}
				return
			}
			if err != nil || res.Pack == "" {
				t.Fatalf("the stale file held the repack off: %+v %v", res, err)
			}
			for _, p := range []string{pid, pid + ".lock"} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s after the repack: %v", filepath.Base(p), err)
				}
			}
		})
	}
	os.Remove(pid)
	os.Remove(pid + ".lock")
	git(t, r.Dir, "fsck", "--strict")
}

// deadPID returns the PID of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
