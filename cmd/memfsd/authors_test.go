package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Operator actions are authored by the operator identity, agent writes
// by the agent, and commit subjects name paths one way — relative to the
// memory root, as git does — on the tool and the direct-write routes
// alike (issue 28).
func TestAuthors_OperatorAndAgentApart(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "au", "--operator-name", "Ops Team", "--operator-email", "ops@example.com")
	dir := memDir(home, "au")
	if out, isErr := p.memory("au", `{"command":"create","path":"/memories/notes/todo.md","file_text":"todo\n"}`); isErr {
		t.Fatalf("tool create: %s", out)
	}
	os.WriteFile(filepath.Join(dir, "moved.md"), []byte("direct\n"), 0o600)
	waitFor(t, 10*time.Second, "moved.md committed", func() bool {
		return git(t, dir, "log", "-1", "--format=%s", "--", "moved.md") != ""
	})
	blockSet(t, srv, home, "au", "persona", "---\ndescription: ops\nread_only: true\n---\nSet by ops.\n")
	// The agent's shell changes the human block: put back, by the operator.
	human := filepath.Join(dir, "system", "human.md")
	// memfsd may put the file back between the write and the commit (its
	// watcher is quick): then the shell writes and commits again.
	for i := 0; ; i++ {
		os.WriteFile(human, []byte("---\ndescription: mine\nread_only: true\n---\nforged\n"), 0o600)
		out, err := gitTry(dir, "commit", "-q", "-am", "forged human")
		if err == nil {
			break
		}
		if i == 20 {
			t.Fatalf("the shell's commit of human.md failed 20 times: %v %s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if tr := p.turn("au"); tr.Outcome != "pushed" {
		t.Fatalf("turn = %+v", tr)
	}
	log := git(t, srv.RepoDir("au"), "log", "--format=%an <%ae>|%s", "main")
	for _, want := range []string{
		"au <au@memfsd.local>|memory: create notes/todo.md",
		"au <au@memfsd.local>|memory: create moved.md",
		"Ops Team <ops@example.com>|memfsd: operator set system/persona.md",
		"Ops Team <ops@example.com>|memfsd: restore read-only system/human.md",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("remote log lacks %q:\n%s", want, log)
		}
	}
	if got := git(t, srv.RepoDir("au"), "log", "--author=Ops Team", "--format=%s", "main"); strings.Contains(got, "memory:") {
		t.Errorf("an agent write authored by the operator:\n%s", got)
	}
}

// Without --operator-name the operator's commits are memfsd-operator's.
func TestAuthors_DefaultOperator(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	startDaemon(t, srv, home, "--agent", "ad")
	blockSet(t, srv, home, "ad", "human", "---\ndescription: who\nread_only: true\n---\nA person.\n")
	if got := git(t, srv.RepoDir("ad"), "log", "-1", "--format=%an <%ae> %s", "main"); got != "memfsd-operator <memfsd-operator@memfsd.local> memfsd: operator set system/human.md" {
		t.Fatalf("block set authored as %q", got)
	}
}
