package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/agent"
)

// TestRemoteRecord_MovedHomeMakesNoNewEmbeddedRemote: an agent on the
// embedded remote whose home was moved is refused, naming the recorded
// remote, the missing path and what to write; the old path gets no new
// empty repository (the embedded remote creates one on first use).
func TestRemoteRecord_MovedHomeMakesNoNewEmbeddedRemote(t *testing.T) {
	root := t.TempDir()
	cfg := &agent.Config{Home: filepath.Join(root, "home")}
	a, err := agent.New(cfg, "e")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Close(context.Background())
	recorded := agent.RecordedRemote(cfg, "e")
	if !strings.HasPrefix(recorded, "memfsd://"+filepath.Join(root, "home", "remote")) {
		t.Fatalf("recorded remote = %q", recorded)
	}

	if err := os.Rename(filepath.Join(root, "home"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	moved := &agent.Config{Home: filepath.Join(root, "moved")}
	b, err := agent.New(moved, "e")
	if err != nil {
		t.Fatal(err)
	}
	err = b.Open(context.Background())
	b.Close(context.Background())
	if !errors.Is(err, agent.ErrRemoteMismatch) || !strings.Contains(err.Error(), "was the home moved?") || !strings.Contains(err.Error(), "origin-url") {
		t.Fatalf("open after the home moved: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "home")); err == nil {
		t.Fatal("a new embedded remote was made at the old home")
	}
}

// TestRemoteRecord_NoOriginNeedsTheOperator: a repository with no origin
// and no record (memfsd always writes one: someone removed it) is not
// given the default embedded remote: refused until the operator names one.
func TestRemoteRecord_NoOriginNeedsTheOperator(t *testing.T) {
	root := t.TempDir()
	cfg := &agent.Config{Home: filepath.Join(root, "home")}
	a, err := agent.New(cfg, "n")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Close(context.Background())
	os.Remove(filepath.Join(root, "home", "agents", "n", "origin-url"))
	git(t, a.Dir(), "remote", "remove", "origin")
	b, _ := agent.New(cfg, "n")
	err = b.Open(context.Background())
	b.Close(context.Background())
	if !errors.Is(err, agent.ErrRemoteMismatch) || !strings.Contains(err.Error(), "has no origin") {
		t.Fatalf("open with no origin and no record: %v", err)
	}
}
