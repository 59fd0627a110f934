package agent_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/testgit"
	"github.com/memfsd/memfsd/retry"
)

const token = "tok-0123456789-secret"

func git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return testgit.Run(tb, dir, args...)
}

// open opens an agent and closes it when the test ends.
func open(tb testing.TB, cfg *agent.Config, id string) (*agent.Agent, error) {
	a, err := agent.New(cfg, id)
	if err != nil {
		return nil, err
	}
	if err := a.Open(context.Background()); err != nil {
		return nil, err
	}
	tb.Cleanup(func() { a.Close(context.Background()) })
	return a, nil
}

func newConfig(tb testing.TB, srv *gitserver.Server, tok string, logs *bytes.Buffer) *agent.Config {
	tb.Helper()
	cfg := &agent.Config{Home: filepath.Join(tb.TempDir(), "home"), BaseURL: srv.URL, Token: tok}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	return cfg
}

func cliClone(tb testing.TB, srv *gitserver.Server, id string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "peer")
	u := strings.Replace(srv.RemoteURL(id), "http://", "http://memfsd:"+token+"@", 1)
	git(tb, filepath.Dir(dir), "clone", "-q", u, dir)
	return dir
}

func TestAgent_FirstRunInitialisesThenPullsFastForward(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	ctx := context.Background()

	a, err := open(t, cfg, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	// The empty remote got one commit with the default blocks.
	bare := srv.RepoDir("agent-1")
	if n := git(t, bare, "rev-list", "--count", "main"); n != "1" {
		t.Fatalf("remote has %s commits, want 1", n)
	}
	if got := git(t, bare, "show", "main:"+blocks.PersonaPath); got+"\n" != blocks.DefaultPersona {
		t.Fatalf("remote persona = %q", got)
	}
	if fi, err := os.Stat(cfg.MemoryDir("agent-1")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("memory folder mode: %v %v", fi.Mode(), err)
	}

	// Another clone commits with the git CLI and pushes.
	peer := cliClone(t, srv, "agent-1")
	os.WriteFile(filepath.Join(peer, "from-peer.md"), []byte("peer note\n"), 0o644)
	git(t, peer, "add", "from-peer.md")
	git(t, peer, "commit", "-qm", "peer: add note")
	git(t, peer, "push", "-q", "origin", "main")

	// A later run opens the existing folder and fast-forwards.
	a, err = open(t, cfg, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Sync(ctx, agent.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pulled {
		t.Fatal("sync did not report a pull")
	}
	data, err := os.ReadFile(filepath.Join(a.Dir(), "from-peer.md"))
	if err != nil || string(data) != "peer note\n" {
		t.Fatalf("pulled file: %q %v", data, err)
	}
	if got := git(t, a.Dir(), "status", "--porcelain"); got != "" {
		t.Fatalf("status after pull: %q", got)
	}
	if git(t, a.Dir(), "rev-parse", "HEAD") != git(t, peer, "rev-parse", "HEAD") {
		t.Fatal("HEAD is not the peer's commit")
	}
	git(t, a.Dir(), "fsck", "--strict")
}

func TestAgent_OneWriteOneCommitThenRevert(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	cfg := newConfig(t, srv, token, nil)
	ctx := context.Background()
	a, err := open(t, cfg, "a2")
	if err != nil {
		t.Fatal(err)
	}
	dir := a.Dir()
	before := git(t, dir, "rev-list", "--count", "HEAD")
	os.WriteFile(filepath.Join(dir, "facts.md"), []byte("the sky is blue\n"), 0o600)
	res, err := a.Sync(ctx, agent.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Committed != 1 || res.Pushed != 1 {
		t.Fatalf("sync result %+v, want 1 commit pushed", res)
	}
	if n := git(t, dir, "rev-list", "--count", "HEAD"); n != "2" || before != "1" {
		t.Fatalf("commits %s -> %s, want 1 -> 2", before, n)
	}
	if got := git(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s"); got != "a2 <a2@memfsd.local>|a2 <a2@memfsd.local>|memory: create facts.md" {
		t.Fatalf("head commit = %q", got)
	}
	if got := git(t, dir, "status", "--porcelain"); got != "" {
		t.Fatalf("status: %q", got)
	}
	git(t, dir, "fsck", "--strict")
	if patch := git(t, dir, "log", "-1", "-p"); !strings.Contains(patch, "+the sky is blue") {
		t.Fatalf("git log -p lacks the change:\n%s", patch)
	}

	// A person reverts in the memory folder; the next sync pushes it.
	git(t, dir, "revert", "--no-edit", "HEAD")
	if _, err := os.Stat(filepath.Join(dir, "facts.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("revert left facts.md: %v", err)
	}
	res, err = a.Sync(ctx, agent.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pushed != 1 || res.Committed != 0 {
		t.Fatalf("sync after revert %+v, want the revert pushed and nothing committed", res)
	}
	bare := srv.RepoDir("a2")
	if got := git(t, bare, "log", "-1", "--format=%s", "main"); !strings.HasPrefix(got, `Revert "memory: create facts.md"`) {
		t.Fatalf("remote head = %q", got)
	}
	git(t, bare, "fsck", "--strict")
}

func TestAgent_WrongTokenIsAuthAndNeverLeaks(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	var logs bytes.Buffer
	bad := "wrong-token-ZZZ-987654"
	cfg := newConfig(t, srv, bad, &logs)
	_, err := open(t, cfg, "a3")
	if err == nil {
		t.Fatal("open with a wrong token succeeded")
	}
	if c := retry.ClassOf(err); c != retry.ClassAuth {
		t.Fatalf("class = %q, want auth (err %v)", c, err)
	}
	if strings.Contains(err.Error(), bad) || strings.Contains(logs.String(), bad) {
		t.Fatalf("token leaked: err=%v logs=%s", err, logs.String())
	}
	// Nothing under home mentions the token (config, refs, anything).
	filepath.WalkDir(cfg.Home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(bad)) {
				t.Errorf("token found in %s", p)
			}
		}
		return nil
	})
	// The right token on the same home then works.
	cfg.Token = token
	if _, err := open(t, cfg, "a3"); err != nil {
		t.Fatalf("open with the right token: %v", err)
	}
	if cfgText, _ := os.ReadFile(filepath.Join(cfg.MemoryDir("a3"), ".git", "config")); bytes.Contains(cfgText, []byte(token)) {
		t.Fatal("token in .git/config")
	}
}

func TestAgent_BadIDRefused(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", ".", "..", "a/b", "a b", strings.Repeat("x", 129), "../etc", ".hidden", ".git", "-rf", "-"} {
		if _, err := agent.New(cfg, id); !errors.Is(err, agent.ErrBadID) {
			t.Errorf("id %q: err = %v, want ErrBadID", id, err)
		}
	}
	entries, _ := os.ReadDir(cfg.Home)
	if len(entries) != 0 {
		t.Fatalf("bad ids created %d entries under home", len(entries))
	}
	for _, id := range []string{"a", "_x", "x-", "x.", "a.b-c_d", "9"} {
		if err := agent.ValidateID(id); err != nil {
			t.Errorf("id %q refused: %v", id, err)
		}
	}
}

func TestAgent_EmbeddedDefaultNeedsNoServer(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := open(t, cfg, "local")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a.Dir(), "n.md"), []byte("x\n"), 0o600)
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(cfg.Home, "remote", "v1", "git", "local", "state.git")
	if got := git(t, bare, "log", "--format=%s", "main"); got != "memory: create n.md\nmemfsd: initialise memory with default blocks" {
		t.Fatalf("embedded remote log = %q", got)
	}
	git(t, bare, "fsck", "--strict")
}

func gitErrIn(dir string, args ...string) (string, error) { return testgit.Try(dir, args...) }

// TestAgent_EmbeddedRemoteDivergence: another writer pushes to the embedded
// remote (a clone of its bare repository) while this one has a local
// commit: the sync recovers as with a real server, both sides kept.
func TestAgent_EmbeddedRemoteDivergence(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := open(t, cfg, "emb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sync(ctx, agent.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(cfg.Home, "remote", "v1", "git", "emb", "state.git")
	peer := filepath.Join(t.TempDir(), "peer")
	git(t, "", "clone", "-q", bare, peer)
	os.WriteFile(filepath.Join(peer, "theirs.md"), []byte("from the other writer\n"), 0o600)
	git(t, peer, "add", "-A")
	git(t, peer, "commit", "-q", "-m", "theirs")
	git(t, peer, "push", "-q", "origin", "main")

	os.WriteFile(filepath.Join(a.Dir(), "ours.md"), []byte("from this agent\n"), 0o600)
	res, err := a.Sync(ctx, agent.SyncOptions{})
	if err != nil {
		t.Fatalf("sync after another writer pushed to the embedded remote: %v", err)
	}
	tree := git(t, bare, "ls-tree", "--name-only", "main")
	if !strings.Contains(tree, "theirs.md") || !strings.Contains(tree, "ours.md") {
		t.Fatalf("remote tree after the recovery (%+v):\n%s", res, tree)
	}
	git(t, bare, "fsck", "--strict")
}
