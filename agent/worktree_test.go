package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memfsd/memfsd/agent"
)

// TestAgent_BlockSetNeverWritesThroughALink: the agent's shell replaced
// system/ with a link to a folder outside its memory; the operator's
// `block set` is refused (and says what to do) instead of writing the
// block outside. Before, it wrote <outside>/persona.md by name.
func TestAgent_BlockSetNeverWritesThroughALink(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := open(t, cfg, "blk")
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	os.MkdirAll(outside, 0o700)
	os.WriteFile(filepath.Join(outside, "persona.md"), []byte("outside\n"), 0o600)
	sys := filepath.Join(a.Dir(), "system")
	if err := os.Rename(sys, sys+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, sys); err != nil {
		t.Fatal(err)
	}
	_, err = a.SetBlock("persona", []byte("---\ndescription: operator\n---\nset by the operator\n"))
	if data, _ := os.ReadFile(filepath.Join(outside, "persona.md")); string(data) != "outside\n" {
		t.Fatalf("block set wrote through the agent's link, outside the memory folder: %q", data)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("block set left files outside: %v", entries)
	}
	if err == nil {
		t.Fatal("block set through a link succeeded")
	}
	t.Logf("refused: %v", err)
}
