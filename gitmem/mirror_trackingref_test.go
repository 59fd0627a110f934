package gitmem_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
)

// The agent's shell runs git in its folder and can write any ref under
// .git, the remote-tracking ref included. A mirror push must still send
// only what reached the primary: a commit the agent made and pointed
// refs/remotes/origin/main at never passed the outgoing check (secrets,
// read-only blocks, front matter) and is not on the primary.
func TestRepo_PushMirror_AgentWrittenTrackingRef(t *testing.T) {
	t.Parallel()
	primary, mirror, r, m := mirrorSetup(t, "track")
	if _, err := r.PushMirror(context.Background(), m, gitmem.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	// The agent, with git in its folder.
	writeFile(t, r.Dir, "leak.md", "password=hunter2-not-on-the-primary\n")
	git(t, r.Dir, "add", "leak.md")
	git(t, r.Dir, "-c", "user.name=agent", "-c", "user.email=agent@x", "commit", "-qm", "leak")
	git(t, r.Dir, "update-ref", "refs/remotes/origin/main", "HEAD")

	_, err := r.PushMirror(context.Background(), m, gitmem.MirrorOptions{})
	got := git(t, mirror.RepoDir("track"), "log", "--format=%s", "main")
	if strings.Contains(got, "leak") {
		t.Fatalf("the mirror got a commit the primary never had (push err %v):\nmirror:\n%s\nprimary:\n%s", err, got,
			git(t, primary.RepoDir("track"), "log", "--format=%s", "main"))
	}
}

// A primary that moved on since this clone's last sync: the mirror push
// waits for the sync that brings the new tip (ErrPrimaryAhead, retryable),
// then sends it.
func TestRepo_PushMirror_PrimaryAhead(t *testing.T) {
	t.Parallel()
	primary, mirror, r, m := mirrorSetup(t, "ahead")
	peer := t.TempDir()
	git(t, peer, "clone", "-q", primary.RepoDir("ahead"), ".")
	writeFile(t, peer, "peer.md", "from a peer\n")
	git(t, peer, "add", "peer.md")
	git(t, peer, "-c", "user.name=peer", "-c", "user.email=peer@x", "commit", "-qm", "peer")
	git(t, peer, "push", "-q", "origin", "HEAD:main")

	if _, err := r.PushMirror(context.Background(), m, gitmem.MirrorOptions{}); !errors.Is(err, gitmem.ErrPrimaryAhead) {
		t.Fatalf("push mirror with the primary ahead: %v, want ErrPrimaryAhead", err)
	}
	if _, err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PushMirror(context.Background(), m, gitmem.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	sameLog(t, primary, mirror, "ahead")
}
