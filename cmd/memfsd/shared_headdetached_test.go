package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestShared_CloneOffItsBranchMovedAside: the shared clone found at start
// on a detached HEAD (a person's `git checkout --detach`, and a commit of
// theirs there) is moved aside whole to <home>/shared/<name>@detached-<stamp>
// (the person's commit kept), the repository is cloned again, the view's
// writes reach the remote again, and the agent is told once
// (shared_head_detached, no host path). Before, every write in the view
// failed "HEAD is detached" and was tried again every ~50 ms for good.
func TestShared_CloneOffItsBranchMovedAside(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "hd")
	if code, err := p.adminCall("PUT", "/v1/agents/hd/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
		t.Fatalf("attach: %d %v", code, err)
	}
	if out, isErr := p.sharedTool("hd", "team", `{"command":"create","path":"/memories/a.md","file_text":"a\n"}`); isErr {
		t.Fatal(out)
	}
	p.turn("hd")
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(home, "shared", "team", "memory")
	git(t, clone, "checkout", "-q", "--detach")
	os.WriteFile(filepath.Join(clone, "person.md"), []byte("a person's note\n"), 0o600)
	git(t, clone, "add", "person.md")
	git(t, clone, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "-m", "a person's commit on a detached HEAD")
	personCommit := git(t, clone, "rev-parse", "HEAD")

	p = startDaemon(t, srv, home, "--agent", "hd")
	aside, _ := filepath.Glob(filepath.Join(home, "shared", "team@detached-*"))
	if len(aside) != 1 {
		t.Fatalf("moved-aside clones %v, want 1", aside)
	}
	if _, err := gitTry(filepath.Join(aside[0], "memory"), "cat-file", "-e", personCommit+"^{commit}"); err != nil {
		t.Fatalf("the person's commit is not in the moved-aside clone: %v", err)
	}
	view := filepath.Join(home, "agents", "hd", "shared", "team")
	os.WriteFile(filepath.Join(view, "c.md"), []byte("written in the view\n"), 0o600)
	waitFor(t, 30*time.Second, "the view's write on the remote", func() bool {
		p.turn("hd")
		got, err := gitTry(srv.SharedRepoDir("team"), "show", "main:c.md")
		return err == nil && got == "written in the view"
	})
	if b := git(t, clone, "symbolic-ref", "HEAD"); b != "refs/heads/main" {
		t.Fatalf("the new clone's HEAD is %s", b)
	}
	var out struct {
		Reminders []struct{ Kind, Text string } `json:"reminders"`
	}
	if code, err := p.get("/v1/agents/hd/reminders", &out); err != nil || code != 200 {
		t.Fatalf("reminders: %d %v", code, err)
	}
	n := 0
	for _, r := range out.Reminders {
		if r.Kind == "shared_head_detached" {
			n++
			if !strings.Contains(r.Text, "shared/team") || strings.Contains(r.Text, home) {
				t.Fatalf("reminder %q: want the view folder as the agent sees it, no host path", r.Text)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d shared_head_detached reminders, want 1: %+v", n, out.Reminders)
	}
}
