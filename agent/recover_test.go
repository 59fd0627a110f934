package agent_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/retry"
	"github.com/memfsd/memfsd/worktree"
)

var fastRetry = retry.Policy{Initial: 5 * time.Millisecond, Multiplier: 2, Max: 50 * time.Millisecond, Budget: 3 * time.Second}

// twoClones opens the same agent from two homes (two machines).
func twoClones(t *testing.T, srv *gitserver.Server, id string) (*agent.Agent, *agent.Agent) {
	t.Helper()
	var out []*agent.Agent
	for i := 0; i < 2; i++ {
		cfg := newConfig(t, srv, token, nil)
		cfg.Retry = fastRetry
		a, err := open(t, cfg, id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out[0], out[1]
}

func write(t *testing.T, a *agent.Agent, rel, content string) {
	t.Helper()
	p := filepath.Join(a.Dir(), filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func remoteFile(t *testing.T, srv *gitserver.Server, id, rel string) string {
	t.Helper()
	return git(t, srv.RepoDir(id), "show", "main:"+rel)
}

func syncBoth(t *testing.T, a, b *agent.Agent) (agent.SyncResult, agent.SyncResult) {
	t.Helper()
	var ra, rb agent.SyncResult
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ra, ea = a.Sync(context.Background(), agent.SyncOptions{}) }()
	go func() { defer wg.Done(); rb, eb = b.Sync(context.Background(), agent.SyncOptions{}) }()
	wg.Wait()
	if ea != nil || eb != nil {
		t.Fatalf("sync: %v / %v", ea, eb)
	}
	return ra, rb
}

func TestRecover_NonFastForward(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	t.Run("DifferentFiles", func(t *testing.T) {
		a, b := twoClones(t, srv, "nff1")
		write(t, a, "a.md", "from a\n")
		write(t, b, "b.md", "from b\n")
		syncBoth(t, a, b)
		if _, err := a.Sync(context.Background(), agent.SyncOptions{}); err != nil { // a picks up b's write if b won last
			t.Fatal(err)
		}
		if remoteFile(t, srv, "nff1", "a.md") != "from a" || remoteFile(t, srv, "nff1", "b.md") != "from b" {
			t.Fatal("a write is missing on the remote")
		}
		git(t, srv.RepoDir("nff1"), "fsck", "--strict")
		git(t, a.Dir(), "fsck", "--strict")
		git(t, b.Dir(), "fsck", "--strict")
	})
	t.Run("SameFileDifferentLines", func(t *testing.T) {
		a, b := twoClones(t, srv, "nff2")
		write(t, a, "n.md", "1\n2\n3\n4\n5\n")
		if _, err := a.Sync(context.Background(), agent.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Sync(context.Background(), agent.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
		write(t, a, "n.md", "ONE\n2\n3\n4\n5\n")
		write(t, b, "n.md", "1\n2\n3\n4\nFIVE\n")
		syncBoth(t, a, b)
		for _, x := range []*agent.Agent{a, b} {
			if _, err := x.Sync(context.Background(), agent.SyncOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		want := "ONE\n2\n3\n4\nFIVE"
		if got := remoteFile(t, srv, "nff2", "n.md"); got != want {
			t.Fatalf("remote n.md = %q, want merged %q", got, want)
		}
		for _, x := range []*agent.Agent{a, b} {
			data, _ := os.ReadFile(filepath.Join(x.Dir(), "n.md"))
			if string(data) != want+"\n" {
				t.Fatalf("work tree n.md = %q", data)
			}
			if st := git(t, x.Dir(), "status", "--porcelain"); st != "" {
				t.Fatalf("status after merge: %q", st)
			}
		}
		git(t, srv.RepoDir("nff2"), "fsck", "--strict")
	})
	t.Run("SameLineKeepsBoth", func(t *testing.T) {
		a, b := twoClones(t, srv, "nff3")
		write(t, a, "n.md", "base\n")
		a.Sync(context.Background(), agent.SyncOptions{})
		b.Sync(context.Background(), agent.SyncOptions{})
		write(t, a, "n.md", "text from a\n")
		write(t, b, "n.md", "text from b\n")
		ra, rb := syncBoth(t, a, b)
		conflicts := append(ra.Conflicts, rb.Conflicts...)
		if len(conflicts) != 1 || !worktree.IsConflictCopy(conflicts[0]) || !strings.HasPrefix(conflicts[0], "n.conflict-") {
			t.Fatalf("conflicts = %v, want one n.conflict-<sha>.md", conflicts)
		}
		a.Sync(context.Background(), agent.SyncOptions{})
		b.Sync(context.Background(), agent.SyncOptions{})
		tree := git(t, srv.RepoDir("nff3"), "ls-tree", "-r", "--name-only", "main")
		both := remoteFile(t, srv, "nff3", "n.md") + "|" + remoteFile(t, srv, "nff3", conflicts[0])
		if !strings.Contains(both, "text from a") || !strings.Contains(both, "text from b") {
			t.Fatalf("a text is lost: %q (tree %s)", both, tree)
		}
		git(t, srv.RepoDir("nff3"), "fsck", "--strict")
	})
}

func TestRecover_UnrelatedHistory(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	cfg.Retry = fastRetry
	a, err := open(t, cfg, "unrel")
	if err != nil {
		t.Fatal(err)
	}
	write(t, a, "mine.md", "only local\n")
	write(t, a, "shared.md", "local version\n")
	if _, err := a.Sync(context.Background(), agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, a, "unpushed.md", "written after the last push\n")

	// The server is reset: a new history with its own files.
	// shared.md "server version", server.md "server only".
	bare := srv.RepoDir("unrel")
	fixture.ImportInto(t, "reset", bare)
	serverTip := git(t, bare, "rev-parse", "main")
	oldLocal := git(t, a.Dir(), "rev-parse", "HEAD")

	res, err := a.Sync(context.Background(), agent.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Backup == "" || git(t, a.Dir(), "rev-parse", res.Backup) == "" {
		t.Fatalf("no backup ref: %+v", res)
	}
	// The backup holds the old tip (plus the unpushed write committed on top).
	if _, err := gitErrIn(a.Dir(), "merge-base", "--is-ancestor", oldLocal, res.Backup); err != nil {
		t.Fatalf("backup %s does not contain the old tip", res.Backup)
	}
	if _, err := gitErrIn(bare, "merge-base", "--is-ancestor", serverTip, "main"); err != nil {
		t.Fatal("the server's history is not the base")
	}
	for rel, want := range map[string]string{"mine.md": "only local", "unpushed.md": "written after the last push", "server.md": "server only", "shared.md": "server version"} {
		if got := remoteFile(t, srv, "unrel", rel); got != want {
			t.Errorf("remote %s = %q, want %q", rel, got, want)
		}
	}
	if len(res.Conflicts) != 1 || remoteFile(t, srv, "unrel", res.Conflicts[0]) != "local version" {
		t.Fatalf("conflict copy of shared.md: %v", res.Conflicts)
	}
	if st := git(t, a.Dir(), "status", "--porcelain"); st != "" {
		t.Fatalf("status: %q", st)
	}
	git(t, bare, "fsck", "--strict")
}

func TestRecover_RetryableStatuses(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	cfg.Retry = fastRetry
	a, err := open(t, cfg, "flaky")
	if err != nil {
		t.Fatal(err)
	}
	for i, status := range []int{502, 503, 520, 521, 522, 523, 524, 429} {
		write(t, a, fmt.Sprintf("f%d.md", i), "x\n")
		f := &gitserver.Fault{Match: "/v1/git/flaky/", Count: 2, Status: status}
		if status == 429 {
			f.Header = http.Header{"Retry-After": []string{"1"}}
		}
		srv.AddFault(f)
		start := time.Now()
		res, err := a.Sync(context.Background(), agent.SyncOptions{})
		if err != nil {
			t.Fatalf("%d: %v", status, err)
		}
		if res.Attempts != 3 || f.Hits.Load() != 2 || res.Pushed != 1 {
			t.Fatalf("%d: attempts %d, faults hit %d, pushed %d; want 3, 2, 1", status, res.Attempts, f.Hits.Load(), res.Pushed)
		}
		if status == 429 && time.Since(start) < 2*time.Second {
			t.Fatalf("429 with Retry-After: 1 retried after %s", time.Since(start))
		}
	}
	t.Run("BeyondBudgetStaysLocalThenPushes", func(t *testing.T) {
		write(t, a, "late.md", "kept\n")
		f := srv.AddFault(&gitserver.Fault{Match: "/v1/git/flaky/", Count: -1, Status: 503})
		_, err := a.Sync(context.Background(), agent.SyncOptions{})
		if retry.ClassOf(err) != retry.ClassRetryable {
			t.Fatalf("err = %v, want class retryable", err)
		}
		if st := a.Status(true); st.Ahead != 1 {
			t.Fatalf("ahead = %d, want the commit kept locally", st.Ahead)
		}
		srv.RemoveFault(f)
		res, err := a.Sync(context.Background(), agent.SyncOptions{})
		if err != nil || res.Pushed != 1 || remoteFile(t, srv, "flaky", "late.md") != "kept" {
			t.Fatalf("next sync: %+v %v", res, err)
		}
	})
	t.Run("ConnectionReset", func(t *testing.T) {
		write(t, a, "reset.md", "x\n")
		srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/flaky/state.git/git-receive-pack", Count: 1, Reset: true})
		res, err := a.Sync(context.Background(), agent.SyncOptions{})
		if err != nil || res.Attempts != 2 {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

func TestRecover_AuthIsOneAttempt(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	cfg.Retry = fastRetry
	a, err := open(t, cfg, "auth")
	if err != nil {
		t.Fatal(err)
	}
	write(t, a, "x.md", "x\n")
	before := srv.Requests()
	f := srv.AddFault(&gitserver.Fault{Match: "/v1/git/auth/", Count: -1, Status: 401})
	res, err := a.Sync(context.Background(), agent.SyncOptions{})
	if retry.ClassOf(err) != retry.ClassAuth || res.Attempts != 1 {
		t.Fatalf("class %q attempts %d, want auth and 1 (%v)", retry.ClassOf(err), res.Attempts, err)
	}
	if n := srv.Requests() - before; n != 1 || f.Hits.Load() != 1 {
		t.Fatalf("%d requests for a 401, want 1", n)
	}
}

// TestRecover_Property: three clones write unique tokens in random order
// with random syncs under random faults; after final syncs every token is
// on the remote, at its path or in a conflict copy.
func TestRecover_Property(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	var clones []*agent.Agent
	for i := 0; i < 3; i++ {
		cfg := newConfig(t, srv, token, nil)
		cfg.Retry = retry.Policy{Initial: time.Millisecond, Multiplier: 2, Max: 10 * time.Millisecond, Budget: 100 * time.Millisecond}
		a, err := open(t, cfg, "prop")
		if err != nil {
			t.Fatal(err)
		}
		clones = append(clones, a)
	}
	var tokens []string
	statuses := []int{500, 502, 503, 520, 524}
	for step := 0; step < 60; step++ {
		c := clones[rng.Intn(3)]
		switch rng.Intn(4) {
		case 0, 1:
			tok := fmt.Sprintf("token-%d-%d", step, rng.Int63())
			tokens = append(tokens, tok)
			rel := fmt.Sprintf("f%d.md", rng.Intn(5)) // few files: real conflicts
			p := filepath.Join(c.Dir(), rel)
			old, _ := os.ReadFile(p)
			lines := strings.Split(strings.TrimRight(string(old), "\n"), "\n")
			k := rng.Intn(len(lines) + 1)
			lines = append(lines[:k], append([]string{tok}, lines[k:]...)...)
			os.WriteFile(p, []byte(strings.TrimLeft(strings.Join(lines, "\n"), "\n")+"\n"), 0o600)
		case 2:
			if rng.Intn(2) == 0 {
				srv.AddFault(&gitserver.Fault{Count: 1 + rng.Intn(3), Status: statuses[rng.Intn(len(statuses))]})
			}
			c.Sync(context.Background(), agent.SyncOptions{}) // may fail: commits stay local
		case 3:
			var wg sync.WaitGroup
			for _, x := range clones {
				wg.Add(1)
				go func(x *agent.Agent) { defer wg.Done(); x.Sync(context.Background(), agent.SyncOptions{}) }(x)
			}
			wg.Wait()
		}
	}
	srv.ClearFaults()
	for round := 0; round < 2; round++ {
		for _, c := range clones {
			if _, err := c.Sync(context.Background(), agent.SyncOptions{}); err != nil {
				t.Fatalf("final sync: %v", err)
			}
		}
	}
	bare := srv.RepoDir("prop")
	all := git(t, bare, "grep", "-h", "token-", "main", "--")
	for _, tok := range tokens {
		if !strings.Contains(all, tok) {
			t.Errorf("token %s lost (seed %d)", tok, seed)
		}
	}
	git(t, bare, "fsck", "--strict")
	t.Logf("%d tokens, %d faulted requests", len(tokens), srv.Faulted())
}
