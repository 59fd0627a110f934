package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/memtool"
)

// readOnlyPaths are the blocks the agent may never change on the remote.
var readOnlyPaths = []string{"system/persona.md", "system/human.md", "notes/locked.md"}

// agentActions plays a sequence of agent-side actions — memory-tool calls,
// direct writes and deletes, a shell's git commit and git reset, syncs —
// chosen by ops, against an agent on the embedded remote whose operator
// has made notes/locked.md read-only, and fails the test when a read-only
// block differs on the remote afterwards.
func agentActions(t *testing.T, ops []byte) {
	cfg := &agent.Config{Home: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := open(t, cfg, "fz")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(cfg.Home, "remote", "v1", "git", "fz", "state.git")
	op := filepath.Join(t.TempDir(), "operator")
	git(t, "", "clone", "-q", bare, op)
	os.MkdirAll(filepath.Join(op, "notes"), 0o700)
	os.WriteFile(filepath.Join(op, "notes", "locked.md"), []byte("---\nread_only: true\n---\nhouse rules\n"), 0o600)
	os.WriteFile(filepath.Join(op, "notes", "open.md"), []byte("---\ndescription: free\n---\nopen notes\n"), 0o600)
	git(t, op, "add", "-A")
	git(t, op, "commit", "-q", "-m", "operator: house rules")
	git(t, op, "push", "-q", "origin", "main")
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, p := range readOnlyPaths {
		before[p] = git(t, bare, "show", "main:"+p)
	}
	dir := a.Dir()
	paths := append([]string{"notes/open.md", "notes/new.md"}, readOnlyPaths...)
	contents := []string{"evil\n", "---\nread_only: false\n---\nunlocked\n", "---\nread_only: true\n---\nmine now\n", "plain note\n"}
	for i := 0; i+1 < len(ops); i += 2 {
		p := paths[int(ops[i+1])%len(paths)]
		c := contents[int(ops[i+1]/7)%len(contents)]
		switch ops[i] % 7 {
		case 0: // the memory tool
			in, _ := memtool.Decode([]byte(fmt.Sprintf(`{"command":"create","path":"/memories/%s","file_text":%q}`, p, c)))
			if _, err := a.RunMemory(in, ""); err != nil {
				t.Fatal(err)
			}
		case 1: // the tool edits in place
			in, _ := memtool.Decode([]byte(fmt.Sprintf(`{"command":"insert","path":"/memories/%s","insert_line":0,"insert_text":%q}`, p, c)))
			if _, err := a.RunMemory(in, ""); err != nil {
				t.Fatal(err)
			}
		case 2: // a direct write
			os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o700)
			os.WriteFile(filepath.Join(dir, p), []byte(c), 0o600)
		case 3: // a direct delete
			os.Remove(filepath.Join(dir, p))
		case 4: // the shell commits everything
			gitTry(dir, "add", "-A")
			gitTry(dir, "commit", "-q", "-m", "shell")
		case 5: // the shell rewinds
			gitTry(dir, "reset", "-q", "--hard", "HEAD~1")
		case 6: // a turn
			if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil && !errors.Is(err, agent.ErrMassDeleteHeld) {
				t.Logf("sync: %v", err) // holds and the like: the property is what matters
			}
		}
	}
	a.Sync(ctx, agent.SyncOptions{})
	for _, p := range readOnlyPaths {
		if got := git(t, bare, "show", "main:"+p); got != before[p] {
			t.Fatalf("ops %v changed %s on the remote:\n%s\nwas:\n%s", ops, p, got, before[p])
		}
	}
	if log, err := gitTry(bare, "fsck", "--strict"); err != nil {
		t.Fatalf("fsck: %v %s", err, log)
	}
}

func gitTry(dir string, args ...string) (string, error) { return gitErrIn(dir, args...) }

// FuzzReadOnlyNeverReachesRemote: no sequence of agent-side actions changes
// a read-only block on the remote (SPEC §8). `go test` runs the seeds;
// `go test -fuzz FuzzReadOnly ./agent` explores.
func FuzzReadOnlyNeverReachesRemote(f *testing.F) {
	f.Add([]byte{2, 2, 4, 0, 6, 0})       // direct write to persona, shell commit, sync
	f.Add([]byte{2, 4, 4, 0, 6, 0})       // direct write to locked.md, shell commit, sync
	f.Add([]byte{2, 8, 4, 0, 5, 0, 6, 0}) // unlock open.md's neighbour, commit, reset, sync
	f.Add([]byte{3, 2, 3, 3, 4, 0, 6, 0}) // delete the blocks, shell commit, sync
	f.Add([]byte{0, 9, 1, 4, 6, 0, 2, 14, 4, 0, 6, 0})
	f.Add([]byte{2, 11, 4, 0, 2, 4, 4, 0, 5, 0, 6, 0, 6, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 40 {
			ops = ops[:40]
		}
		agentActions(t, ops)
	})
}

// TestReadOnly_RandomAgentActions runs random sequences with a logged seed
// (the fuzz target's seeds cover the named routes).
func TestReadOnly_RandomAgentActions(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 8; i++ {
		ops := make([]byte, 24)
		rng.Read(ops)
		t.Run(fmt.Sprint(i), func(t *testing.T) { agentActions(t, ops) })
	}
}
