package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/soak"
)

// `memfsd block set` at once after /healthz answers, while the first sync
// has not yet learned the remote's tip (a slow remote): the approval is
// bound when the tip becomes known, and the persona is on the remote every
// time — never `memfsd: restore read-only` over it (issue 28). Each trial
// is one agent of a daemon whose remote answers every request slowly;
// MEMFSD_SOAK=1 runs a hundred trials.
func TestBlockSet_AtOnceAfterHealthz(t *testing.T) {
	t.Parallel()
	daemons, agents := 4, 5 // 20 trials
	if soak.On() {
		daemons, agents = 10, 10
	}
	// How many trials hit the window (the approval made before the tip
	// was known): logged, so a run that never hit it shows.
	var bound atomic.Int64
	t.Cleanup(func() {
		t.Logf("%d of %d block sets were made before the remote's tip was known", bound.Load(), daemons*agents)
	})
	for d := range daemons {
		t.Run(fmt.Sprintf("daemon%d", d), func(t *testing.T) {
			t.Parallel()
			srv := gitserver.New(t, token)
			srv.AddFault(&gitserver.Fault{Count: -1, Delay: 150 * time.Millisecond})
			home := t.TempDir()
			var args []string
			for i := range agents {
				args = append(args, "--agent", fmt.Sprintf("early%d", i))
			}
			p := launchDaemon(t, srv, home, args...)
			p.waitHealthy(60 * time.Second)
			var wg sync.WaitGroup
			errs := make([]string, agents)
			for i := range agents {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("early%d", i)
					f := filepath.Join(t.TempDir(), "persona.md")
					os.WriteFile(f, []byte(earlyPersona(id)), 0o600)
					if code, out := runCLI(t, srv, home, "block", "set", "persona", "--agent", id, "--file", f); code != 0 {
						errs[i] = fmt.Sprintf("block set %s: exit %d: %s", id, code, out)
					}
				}()
			}
			wg.Wait()
			for _, e := range errs {
				if e != "" {
					t.Fatal(e)
				}
			}
			for i := range agents {
				id := fmt.Sprintf("early%d", i)
				bare := srv.RepoDir(id)
				waitFor(t, 30*time.Second, id+"'s persona on the remote", func() bool {
					out, err := gitTry(bare, "show", "main:system/persona.md")
					return err == nil && out+"\n" == earlyPersona(id)
				})
				// A turn after it changes nothing: the approval ended with the
				// delivery, and nothing restores the old persona.
				if tr := p.turn(id); tr.Outcome != "pushed" && tr.Outcome != "clean" {
					t.Fatalf("turn %s = %+v", id, tr)
				}
				log := git(t, bare, "log", "--format=%s", "main")
				if got := git(t, bare, "show", "main:system/persona.md") + "\n"; got != earlyPersona(id) || strings.Contains(log, "restore read-only") {
					t.Fatalf("%s: remote persona = %q after the turn; remote log:\n%s", id, got, log)
				}
			}
			bound.Add(int64(strings.Count(p.logs.String(), "bound to the remote's tip, learned after it was made")))
		})
	}
}

func earlyPersona(id string) string {
	return "---\ndescription: the operator's persona for " + id + "\nread_only: true\n---\nI am " + id + ", set at once.\n"
}

// A block set whose path changes on the remote before its push lands
// cannot take effect: `memfsd block set` exits non-zero with the reason,
// and the remote keeps the other change (issue 28).
func TestBlockSet_SupersededFails(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	startDaemon(t, srv, home, "--agent", "sup")
	peer := peerClone(t, srv, "sup")
	hang := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/sup/state.git/git-receive-pack", Count: 1, Hang: true})
	f := filepath.Join(t.TempDir(), "persona.md")
	os.WriteFile(f, []byte(earlyPersona("sup")), 0o600)
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out := runCLI(t, srv, home, "block", "set", "persona", "--agent", "sup", "--file", f)
		done <- result{code, out}
	}()
	waitFor(t, 20*time.Second, "the block set's push to reach the remote", func() bool { return hang.Hits.Load() == 1 })
	const other = "---\ndescription: another operator's persona\nread_only: true\n---\nI came first.\n"
	os.WriteFile(filepath.Join(peer, "system", "persona.md"), []byte(other), 0o600)
	git(t, peer, "commit", "-q", "-am", "another operator's persona")
	git(t, peer, "push", "-q", srv.RepoDir("sup"), "HEAD:main") // beside the hung request
	hang.Release()
	res := <-done
	if res.code == 0 || !strings.Contains(res.out, "did not take effect") || !strings.Contains(res.out, "changed on the remote") {
		t.Fatalf("block set = exit %d: %s", res.code, res.out)
	}
	if got := git(t, srv.RepoDir("sup"), "show", "main:system/persona.md") + "\n"; got != other {
		t.Fatalf("remote persona = %q, want the other operator's", got)
	}
}
