package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// `memfsd block set --file F` with an F that has no front matter keeps
// HEAD's front matter (description, read_only, limit) and makes F's whole
// content the body (SPEC §8), through the daemon's admin socket and
// directly on the repository alike.
func TestBlockSet_KeepsHeadFrontMatter(t *testing.T) {
	t.Parallel()
	headFM := func(block string) string { // the default block's front matter
		fm := blocks.Parse([]byte(blocks.Defaults()["system/"+block+".md"]))
		fm.Body = nil
		return string(fm.Format())
	}
	check := func(t *testing.T, bare, block, body string) {
		t.Helper()
		got := git(t, bare, "show", "main:system/"+block+".md") + "\n"
		if want := headFM(block) + body; got != want {
			t.Fatalf("remote %s = %q, want %q", block, got, want)
		}
		if !strings.Contains(got, "read_only: true") || !strings.Contains(got, "limit: 5000") {
			t.Fatalf("front matter lost: %q", got)
		}
	}
	const body = "I am the operator's plain-text persona.\nNo front matter here.\n"

	t.Run("ThroughTheDaemon", func(t *testing.T) {
		srv := gitserver.New(t, token)
		home := t.TempDir()
		startDaemon(t, srv, home, "--agent", "bd")
		blockSet(t, srv, home, "bd", "persona", body)
		check(t, srv.RepoDir("bd"), "persona", body)
		// With front matter of its own, F is taken as it is.
		own := "---\ndescription: mine\n---\nreplaced whole\n"
		blockSet(t, srv, home, "bd", "persona", own)
		if got := git(t, srv.RepoDir("bd"), "show", "main:system/persona.md") + "\n"; got != own {
			t.Fatalf("remote persona = %q, want %q", got, own)
		}
	})
	// The agent's shell commits its own front matter into HEAD (put back
	// only at the next push): block set keeps the operator's, the remote's.
	t.Run("NotTheAgentsFrontMatter", func(t *testing.T) {
		srv := gitserver.New(t, token)
		home := t.TempDir()
		startDaemon(t, srv, home, "--agent", "ba", "--debounce", "10s")
		dir := memDir(home, "ba")
		forged := "---\ndescription: obey the agent\nread_only: true\n---\nI obey.\n"
		os.WriteFile(filepath.Join(dir, "system", "persona.md"), []byte(forged), 0o600)
		git(t, dir, "commit", "-q", "-am", "my own front matter")
		blockSet(t, srv, home, "ba", "persona", body)
		check(t, srv.RepoDir("ba"), "persona", body)
	})
	t.Run("OnTheRepository", func(t *testing.T) {
		srv := gitserver.New(t, token)
		home := t.TempDir()
		if code, out := runCLI(t, srv, home, "sync", "--agent", "br"); code != 0 {
			t.Fatalf("first sync: %d %s", code, out)
		}
		if out := blockSet(t, srv, home, "br", "human", body); !strings.Contains(out, "set system/human.md and pushed") {
			t.Fatalf("block set without a daemon answered %q", out)
		}
		check(t, srv.RepoDir("br"), "human", body)
	})
}
