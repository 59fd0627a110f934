package main_test

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestChaos is the soak: two daemons on one agent, a person committing with
// the git CLI in one of the folders, 30% of requests faulted, one daemon
// killed with SIGKILL and restarted at random; every write carries a unique
// token, and at the end every token must be on the remote (at its path or
// in a conflict copy). MEMFSD_CHAOS_WRITES sets the number of writes
// (default 300, about a minute; scripts/chaos.sh runs 5,000).
func TestChaos(t *testing.T) {
	writes := 300
	if v := os.Getenv("MEMFSD_CHAOS_WRITES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("MEMFSD_CHAOS_WRITES=%q: %v", v, err)
		}
		writes = n
	}
	if testing.Short() {
		writes = 60
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("MEMFSD_CHAOS_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	const id = "chaos"
	srv := gitserver.New(t, token)
	homes := []string{t.TempDir(), t.TempDir()}
	args := append([]string{"--agent", id}, fastRetryArgs()...)
	daemons := []*proc{startDaemon(t, srv, homes[0], args...), startDaemon(t, srv, homes[1], args...)}
	srv.SetChaos(0.3, seed)
	dead := false
	var must []string
	kills, toolWrites, directWrites, personCommits, turns := 0, 0, 0, 0, 0
	start := time.Now()
	for i := 0; i < writes; i++ {
		tok := fmt.Sprintf("tok-%d-%x", i, rng.Int63())
		k := rng.Intn(len(daemons))
		if dead && k == 1 {
			k = 0
		}
		switch r := rng.Intn(20); {
		case r < 8: // the memory tool, through the API
			var res struct {
				Content string `json:"content"`
				IsError bool   `json:"is_error"`
			}
			code, err := daemons[k].call("POST", "/v1/agents/"+id+"/memory",
				`{"command":"create","path":"/memories/t/`+tok+`.md","file_text":"`+tok+`\n"}`, &res)
			if err == nil && code == 200 && !res.IsError {
				must = append(must, tok)
				toolWrites++
			}
		case r < 14: // a direct write: append to one of a few shared files
			p := filepath.Join(memDir(homes[rng.Intn(2)], id), fmt.Sprintf("shared-%d.md", rng.Intn(3)))
			old, _ := os.ReadFile(p)
			if err := os.WriteFile(p, append(old, []byte(tok+"\n")...), 0o600); err == nil {
				must = append(must, tok)
				directWrites++
			}
		case r < 16: // a person commits in the first folder with the git CLI
			dir := memDir(homes[0], id)
			name := "person-" + tok + ".md"
			os.WriteFile(filepath.Join(dir, name), []byte(tok+"\n"), 0o644)
			for attempt := 0; attempt < 30; attempt++ {
				if _, err := gitTry(dir, "add", "--", name); err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if _, err := gitTry(dir, "commit", "-q", "-m", "person "+tok, "--", name); err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				personCommits++
				break
			}
			// Committed by the person or, failing that, by the daemon: either way it must survive.
			must = append(must, tok)
		case r < 19:
			daemons[k].call("POST", "/v1/agents/"+id+"/turn?wait=30s", "", nil)
			turns++
		default:
			if dead {
				daemons[1] = startDaemon(t, srv, homes[1], args...)
				dead = false
			} else {
				daemons[1].cmd.Process.Signal(syscall.SIGKILL)
				daemons[1].cmd.Wait()
				dead = true
				kills++
			}
		}
	}
	faults := srv.Faulted()
	srv.SetChaos(0, 0)
	if dead {
		daemons[1] = startDaemon(t, srv, homes[1], args...)
	}
	// Converge: turns on both until both are clean on the same head.
	converged := false
	for round := 0; round < 10 && !converged; round++ {
		a, b := daemons[0].turn(id), daemons[1].turn(id)
		a, b = daemons[0].turn(id), daemons[1].turn(id)
		converged = a.Status.State != "error" && b.Status.State != "error" &&
			a.Status.Head == b.Status.Head && a.Status.Head == a.Status.RemoteHead && len(a.Status.Dirty) == 0 && len(b.Status.Dirty) == 0
	}
	bare := srv.RepoDir(id)
	all := git(t, bare, "grep", "-h", "tok-", "main", "--")
	// A token missing from the final tree must at least be in the remote's
	// history: a later direct write can legitimately edit it away (the test
	// appends to shared files with read-modify-write, racing the syncs that
	// rewrite them, as any editor would).
	var history string
	lost, editedAway := 0, 0
	for _, tok := range must {
		if strings.Contains(all, tok) {
			continue
		}
		if history == "" {
			history = git(t, bare, "log", "-p", "--all", "--format=%H")
		}
		if strings.Contains(history, tok) {
			editedAway++
			continue
		}
		lost++
		t.Errorf("token %s lost", tok)
	}
	fsck := "clean"
	if out, err := gitTry(bare, "fsck", "--strict"); err != nil {
		fsck = "FAILED: " + out
	}
	for _, h := range homes {
		waitRepackIdle(t, memDir(h, id))
		if out, err := gitTry(memDir(h, id), "fsck", "--strict"); err != nil {
			fsck = "FAILED: " + out
		}
	}
	copies := strings.Count(git(t, bare, "ls-tree", "-r", "--name-only", "main"), ".conflict-")
	t.Logf("chaos: seed %d, %s, writes %d (tool %d, direct %d, person %d), turns %d, faults %d, kills %d, conflict copies %d, converged %v, edited away by a later write %d, lost %d, fsck %s",
		seed, time.Since(start).Round(time.Second), len(must), toolWrites, directWrites, personCommits, turns, faults, kills, copies, converged, editedAway, lost, fsck)
	fmt.Printf("CHAOS writes=%d faults=%d kills=%d edited_away=%d lost=%d fsck=%s converged=%v seed=%d\n", len(must), faults, kills, editedAway, lost, fsck, converged, seed)
	if fsck != "clean" || !converged {
		t.Fatalf("fsck %s, converged %v", fsck, converged)
	}
}
