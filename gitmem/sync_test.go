package gitmem_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// stallBound is how long a local step may take while a sync waits on a
// silent remote: a bound on a stall, not a speed goal.
const stallBound = time.Second

// seed gives the agent's remote a first commit, pushed from r.
func seed(t *testing.T, r *gitmem.Repo) {
	t.Helper()
	commitFile(t, r, "system/persona.md", "I am an agent.\n", "memory: create system/persona.md")
	if _, err := r.Push(context.Background()); err != nil {
		t.Fatalf("seed push: %v", err)
	}
}

func commitFile(t *testing.T, r *gitmem.Repo, rel, content, msg string) {
	t.Helper()
	writeFile(t, r.Dir, rel, content)
	if _, err := r.CommitWrite([]string{rel}, msg); err != nil {
		t.Fatalf("commit %s: %v", rel, err)
	}
}

// peerPush makes another writer push a commit of rel.
func peerPush(t *testing.T, srv *gitserver.Server, agent, rel, content, msg string) {
	t.Helper()
	peer := cliClone(t, srv, agent)
	writeFile(t, peer, rel, content)
	git(t, peer, "add", "--", rel)
	git(t, peer, "commit", "-q", "-m", msg)
	git(t, peer, "push", "-q", "origin", "HEAD:main")
}

// waitHit waits until the remote is sitting on a request the fault took.
func waitHit(t *testing.T, f *gitserver.Fault) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.Hits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the sync never reached the delayed request %q", f.Match)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// localStepsStayFast commits rel and runs the read operations a daemon
// answers with, each within stallBound.
func localStepsStayFast(t *testing.T, r *gitmem.Repo, rel string) string {
	t.Helper()
	content := "written while the remote said nothing\n"
	msg := "memory: create " + rel
	timed := func(name string, f func() error) {
		start := time.Now()
		err := f()
		if d := time.Since(start); d >= stallBound {
			t.Errorf("%s took %s while a sync waited on the remote", name, d.Round(time.Millisecond))
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	writeFile(t, r.Dir, rel, content)
	timed("CommitWrite", func() error { _, err := r.CommitWrite([]string{rel}, msg); return err })
	timed("Status", func() error { _, err := r.Status(); return err })
	timed("Position", func() error { _, err := r.Position(); return err })
	timed("DirtyPaths", func() error { _, err := r.DirtyPaths(); return err })
	timed("HeadFile", func() error {
		data, ok, err := r.HeadFile(rel)
		if err == nil && (!ok || string(data) != content) {
			err = fmt.Errorf("HEAD has %q (%v), want the commit just made", data, ok)
		}
		return err
	})
	return msg
}

// onRemote checks that the remote's branch holds a commit with each message
// and that both sides pass git fsck --strict.
func onRemote(t *testing.T, srv *gitserver.Server, agent string, r *gitmem.Repo, msgs ...string) {
	t.Helper()
	bare := srv.RepoDir(agent)
	log := "\n" + git(t, bare, "log", "--format=%s", "main") + "\n"
	for _, m := range msgs {
		if !strings.Contains(log, "\n"+m+"\n") {
			t.Errorf("remote lacks %q; its log:%s", m, log)
		}
	}
	git(t, bare, "fsck", "--strict")
	git(t, r.Dir, "fsck", "--strict")
	if st := git(t, r.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("work tree not clean: %q", st)
	}
}

// TestRepo_LocalWritesDuringSlowSync: while a sync waits on a remote that
// accepted the request and says nothing (until released), memory writes and
// status answer at once; afterwards every commit reaches the remote.
func TestRepo_LocalWritesDuringSlowSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// prepare sets the scene and returns the fault to wait on and
		// the messages that must end on the remote.
		prepare func(t *testing.T, srv *gitserver.Server, agent string, r *gitmem.Repo) (*gitserver.Fault, []string)
		sync    func(r *gitmem.Repo) error
	}{{
		name: "Fetch",
		prepare: func(t *testing.T, srv *gitserver.Server, agent string, r *gitmem.Repo) (*gitserver.Fault, []string) {
			peerPush(t, srv, agent, "notes/peer.md", "from a peer\n", "peer: notes")
			f := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/" + agent + "/state.git/git-upload-pack", Hang: true, Count: 1})
			return f, []string{"peer: notes"}
		},
		sync: func(r *gitmem.Repo) error { _, err := r.Fetch(ctx); return err },
	}, {
		name: "Push",
		prepare: func(t *testing.T, srv *gitserver.Server, agent string, r *gitmem.Repo) (*gitserver.Fault, []string) {
			commitFile(t, r, "notes/a.md", "a\n", "memory: create notes/a.md")
			f := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/" + agent + "/state.git/git-receive-pack", Hang: true, Count: 1})
			return f, []string{"memory: create notes/a.md"}
		},
		sync: func(r *gitmem.Repo) error {
			res, err := r.Push(ctx)
			if err == nil && res.Commits != 1 {
				err = fmt.Errorf("pushed %d commits, want the 1 made before the push", res.Commits)
			}
			return err
		},
	}, {
		name: "Reconcile",
		prepare: func(t *testing.T, srv *gitserver.Server, agent string, r *gitmem.Repo) (*gitserver.Fault, []string) {
			commitFile(t, r, "notes/a.md", "a\n", "memory: create notes/a.md")
			peerPush(t, srv, agent, "notes/peer.md", "from a peer\n", "peer: notes")
			// The first advertisement (of the push that will be refused)
			// does not come until released.
			f := srv.AddFault(&gitserver.Fault{Match: "/info/refs", Hang: true, Count: 1})
			return f, []string{"memory: create notes/a.md", "peer: notes"}
		},
		sync: func(r *gitmem.Repo) error { _, err := r.Reconcile(ctx); return err },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := gitserver.New(t, testToken)
			agent := "slow-" + strings.ToLower(tc.name)
			r := mustClone(t, srv, agent)
			seed(t, r)
			f, want := tc.prepare(t, srv, agent, r)
			t.Cleanup(f.Release)

			done := make(chan error, 1)
			go func() { done <- tc.sync(r) }()
			waitHit(t, f)
			want = append(want, localStepsStayFast(t, r, "notes/during.md"))
			select {
			case err := <-done:
				t.Fatalf("the sync ended while the remote said nothing (err %v)", err)
			default:
			}
			f.Release()
			if err := <-done; err != nil {
				t.Fatalf("slow %s: %v", tc.name, err)
			}
			srv.ClearFaults()
			if _, err := r.Reconcile(ctx); err != nil {
				t.Fatalf("reconcile after: %v", err)
			}
			onRemote(t, srv, agent, r, append(want, "memory: create system/persona.md")...)
			if st, err := r.Status(); err != nil || st.Relation != gitmem.Same || len(st.Dirty) != 0 {
				t.Fatalf("status after: %+v %v", st, err)
			}
		})
	}
}

// TestRepo_CommitDuringFetchIsReplayed: the remote moved on, so the sync
// replays; a local commit lands while the fetch waits on the remote. The
// result holds every file, the new commit's included.
func TestRepo_CommitDuringFetchIsReplayed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := gitserver.New(t, testToken)
	const agent = "replay-during-fetch"
	r := mustClone(t, srv, agent)
	seed(t, r)
	commitFile(t, r, "notes/mine.md", "mine\n", "memory: create notes/mine.md")
	peerPush(t, srv, agent, "notes/peer.md", "theirs\n", "peer: notes")
	f := srv.AddFault(&gitserver.Fault{Match: "POST /v1/git/" + agent + "/state.git/git-upload-pack", Hang: true, Count: 1})
	t.Cleanup(f.Release)

	type outcome struct {
		res gitmem.ReconcileResult
		err error
	}
	done := make(chan outcome, 1)
	go func() { res, err := r.Reconcile(ctx); done <- outcome{res, err} }()
	waitHit(t, f)
	commitFile(t, r, "notes/during.md", "during\n", "memory: create notes/during.md")
	f.Release()
	out := <-done
	if out.err != nil {
		t.Fatalf("reconcile: %v", out.err)
	}
	if out.res.Relation != gitmem.Diverged || out.res.Replayed != 2 || out.res.Pushed != 2 {
		t.Fatalf("result %+v, want diverged, 2 replayed (the commit before and the one during the fetch), 2 pushed", out.res)
	}
	for rel, want := range map[string]string{"notes/mine.md": "mine\n", "notes/peer.md": "theirs\n", "notes/during.md": "during\n"} {
		data, ok, err := r.HeadFile(rel)
		if err != nil || !ok || string(data) != want {
			t.Errorf("HEAD:%s = %q %v %v, want %q", rel, data, ok, err, want)
		}
		if b, err := os.ReadFile(filepath.Join(r.Dir, rel)); err != nil || string(b) != want {
			t.Errorf("work tree %s = %q %v, want %q", rel, b, err, want)
		}
	}
	onRemote(t, srv, agent, r, "memory: create notes/mine.md", "memory: create notes/during.md", "peer: notes")
	if head, _ := r.Head(); git(t, srv.RepoDir(agent), "rev-parse", "main") != head.String() {
		t.Fatalf("remote is not at the local head")
	}
}

// TestRepo_BranchMovedBeforeMove: someone outside memfsd (a person's git
// commit) moves the branch between the replay and the branch move. The
// move is refused, the sync integrates again from the new head, and the
// person's commit is kept and pushed.
func TestRepo_BranchMovedBeforeMove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := gitserver.New(t, testToken)
	const agent = "moved-before-move"
	r := mustClone(t, srv, agent)
	seed(t, r)
	commitFile(t, r, "notes/mine.md", "mine\n", "memory: create notes/mine.md")
	peerPush(t, srv, agent, "notes/peer.md", "theirs\n", "peer: notes")
	calls := 0
	gitmem.SetBeforeMove(r, func() {
		calls++
		if calls == 1 {
			writeFile(t, r.Dir, "notes/person.md", "by hand\n")
			git(t, r.Dir, "add", "--", "notes/person.md")
			git(t, r.Dir, "commit", "-q", "-m", "person: by hand")
		}
	})
	res, err := r.Reconcile(ctx)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if calls != 2 || res.Replayed != 2 || res.Pushed != 2 {
		t.Fatalf("hook calls %d, result %+v: want a second integration replaying both local commits", calls, res)
	}
	for _, rel := range []string{"notes/mine.md", "notes/peer.md", "notes/person.md"} {
		if _, ok, err := r.HeadFile(rel); err != nil || !ok {
			t.Errorf("HEAD lacks %s (%v)", rel, err)
		}
	}
	onRemote(t, srv, agent, r, "memory: create notes/mine.md", "person: by hand", "peer: notes")
}

// TestRepo_FetchTempFiles: a fetch leaves no temporary file behind, and
// Open removes the ones a crash left (old ones only: a fresh one may be a
// live fetch of another process).
func TestRepo_FetchTempFiles(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, testToken)
	const agent = "fetch-temp"
	r := mustClone(t, srv, agent)
	seed(t, r)
	peerPush(t, srv, agent, "notes/peer.md", "theirs\n", "peer: notes")
	if _, err := r.Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	packDir := filepath.Join(r.GitDir, "objects", "pack")
	temps := func() []string {
		m, _ := filepath.Glob(filepath.Join(packDir, "tmp_fetch_*"))
		return m
	}
	if left := temps(); len(left) != 0 {
		t.Fatalf("fetch left %v", left)
	}
	if got := git(t, r.Dir, "cat-file", "-p", "origin/main:notes/peer.md"); got != "theirs" {
		t.Fatalf("fetched file reads %q", got)
	}
	stale, fresh := filepath.Join(packDir, "tmp_fetch_stale"), filepath.Join(packDir, "tmp_fetch_fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("PACK"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	r2, err := gitmem.Open(r.Dir, r.Remote, gitmem.Options{Author: testAuthor})
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if left := temps(); len(left) != 1 || left[0] != fresh {
		t.Fatalf("after Open: %v, want only the fresh one", left)
	}
	git(t, r.Dir, "fsck", "--strict")
}
