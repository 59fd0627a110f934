package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/memtool"
)

// readOnlyPaths are the blocks the agent may never change on the remote.
var readOnlyPaths = []string{"system/persona.md", "system/human.md", "notes/locked.md"}

// operatorContents are what the operator sets blocks to (block set); the
// agent writes them too, to bring an old one back.
var operatorContents = []string{
	"---\ndescription: operator v1\nread_only: true\n---\npersona one\n",
	"---\ndescription: operator v2\nread_only: true\n---\npersona two\n",
}

// agentActions plays a sequence of actions chosen by ops — the agent's
// memory-tool calls, direct writes and deletes, symbolic links and chmod
// +x, a shell's git commit and git reset, syncs; and the operator's block
// set and pushes from another clone — against an agent on the embedded
// remote whose operator has made notes/locked.md read-only. It fails the
// test when a read-only block on the remote afterwards is not a regular
// file (100644) holding what the operator last gave it: the last push from
// another clone, or a block set made after it (a stale approval must not
// bring an older one back).
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
	// allowed: per read-only path, what the remote may hold at the end.
	allowed := map[string]map[string]bool{}
	for _, p := range readOnlyPaths {
		allowed[p] = map[string]bool{git(t, bare, "show", "main:"+p): true}
	}
	dir := a.Dir()
	paths := append([]string{"notes/open.md", "notes/new.md"}, readOnlyPaths...)
	contents := append([]string{"evil\n", "---\nread_only: false\n---\nunlocked\n", "---\nread_only: true\n---\nmine now\n", "plain note\n"}, operatorContents...)
	pushes := 0
	for i := 0; i+1 < len(ops); i += 2 {
		p := paths[int(ops[i+1])%len(paths)]
		c := contents[int(ops[i+1]/7)%len(contents)]
		abs := filepath.Join(dir, p)
		switch ops[i] % 11 {
		case 0: // the memory tool
			in, _ := memtool.Decode([]byte(fmt.Sprintf(`{"command":"create","path":"/memories/%s","file_text":%q}`, p, c)))
			if _, err := a.RunMemory(in, ""); err != nil {
				t.Logf("memory tool: %v", err) // a link in the way and the like: the property is what matters
			}
		case 1: // the tool edits in place
			in, _ := memtool.Decode([]byte(fmt.Sprintf(`{"command":"insert","path":"/memories/%s","insert_line":0,"insert_text":%q}`, p, c)))
			if _, err := a.RunMemory(in, ""); err != nil {
				t.Logf("memory tool: %v", err)
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
		case 7: // a symbolic link whose target text is the file's content
			if data, err := os.ReadFile(abs); err == nil {
				c = string(data)
			}
			os.MkdirAll(filepath.Dir(abs), 0o700)
			os.Remove(abs)
			os.Symlink(c, abs)
		case 8: // chmod +x, also in the index (a shell's commit takes it)
			os.Chmod(abs, 0o755)
			gitTry(dir, "update-index", "--chmod=+x", p)
		case 9: // the operator's block set (then pushed, as the CLI does)
			block := []string{"persona", "human"}[int(ops[i+1])%2]
			rel := "system/" + block + ".md"
			oc := operatorContents[int(ops[i+1]/2)%len(operatorContents)]
			allowed[rel][strings.TrimRight(oc, "\n")] = true
			if _, err := a.SetBlock(block, []byte(oc)); err != nil {
				t.Logf("block set: %v", err)
			}
			if _, err := a.Sync(ctx, agent.SyncOptions{SkipScan: true}); err != nil {
				t.Logf("sync after block set: %v", err)
			}
		case 10: // the operator pushes a block from another clone
			rel := readOnlyPaths[int(ops[i+1])%len(readOnlyPaths)]
			pushes++
			oc := fmt.Sprintf("---\ndescription: pushed by the operator\nread_only: true\n---\npush %d\n", pushes)
			git(t, op, "fetch", "-q", "origin")
			git(t, op, "reset", "-q", "--hard", "origin/main")
			os.MkdirAll(filepath.Dir(filepath.Join(op, rel)), 0o700)
			os.WriteFile(filepath.Join(op, rel), []byte(oc), 0o600)
			git(t, op, "add", "-A")
			git(t, op, "commit", "-q", "-m", "operator: "+rel)
			git(t, op, "push", "-q", "origin", "main")
			allowed[rel] = map[string]bool{strings.TrimRight(oc, "\n"): true}
		}
	}
	a.Sync(ctx, agent.SyncOptions{})
	for _, p := range readOnlyPaths {
		if got := git(t, bare, "show", "main:"+p); !allowed[p][got] {
			t.Fatalf("ops %v: %s on the remote is not what the operator last gave it:\n%s\nallowed: %v", ops, p, got, allowed[p])
		}
		if e := git(t, bare, "ls-tree", "main", p); !strings.HasPrefix(e, "100644 ") {
			t.Fatalf("ops %v: %s on the remote is %q, want a regular file (100644)", ops, p, e)
		}
	}
	if log, err := gitTry(bare, "fsck", "--strict"); err != nil {
		t.Fatalf("fsck: %v %s", err, log)
	}
}

func gitTry(dir string, args ...string) (string, error) { return gitErrIn(dir, args...) }

// FuzzReadOnlyNeverReachesRemote: no sequence of agent-side actions changes
// a read-only block on the remote (SPEC §8), in bytes or mode, nor brings
// back what the operator had set before a newer push. `go test` runs the seeds;
// `go test -fuzz FuzzReadOnly ./agent` explores.
func FuzzReadOnlyNeverReachesRemote(f *testing.F) {
	f.Add([]byte{2, 2, 4, 0, 6, 0})       // direct write to persona, shell commit, sync
	f.Add([]byte{2, 4, 4, 0, 6, 0})       // direct write to locked.md, shell commit, sync
	f.Add([]byte{2, 8, 4, 0, 5, 0, 6, 0}) // unlock open.md's neighbour, commit, reset, sync
	f.Add([]byte{3, 2, 3, 3, 4, 0, 6, 0}) // delete the blocks, shell commit, sync
	f.Add([]byte{0, 9, 1, 4, 6, 0, 2, 14, 4, 0, 6, 0})
	f.Add([]byte{2, 11, 4, 0, 2, 4, 4, 0, 5, 0, 6, 0, 6, 0})
	f.Add([]byte{7, 2, 4, 0, 6, 0})                     // persona as a link to its own text, shell commit, sync
	f.Add([]byte{8, 4, 4, 0, 6, 0})                     // chmod +x locked.md, shell commit, sync
	f.Add([]byte{7, 3, 6, 0})                           // human as a link, direct write only, sync
	f.Add([]byte{9, 0, 10, 0, 6, 0, 2, 32, 4, 0, 6, 0}) // block set v1, peer pushes, agent writes v1 back: stale
	f.Add([]byte{9, 0, 10, 0, 9, 2, 6, 0})              // block set v1, peer pushes, fresh block set v2 goes through
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
	t.Parallel()
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 8; i++ {
		ops := make([]byte, 24)
		rng.Read(ops)
		t.Run(fmt.Sprint(i), func(t *testing.T) { agentActions(t, ops) })
	}
}
