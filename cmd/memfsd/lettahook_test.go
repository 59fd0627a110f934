package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/testgit"
)

// installLettaHook installs letta-code 0.32.18's own pre-commit hook in
// the clone dir, as letta-code does in its memory clone
// (installPreCommitHookWithPolicy; the copy in testdata/letta/hook/ is what
// `scripts/letta-constraints-golden.mjs BUNDLE --install` wrote, see
// testdata/letta/README.md). policy is letta-code's layout policy:
// "root-marker" for an agent's memory, "shared-memory" for a shared
// repository. The hook runs node.
func installLettaHook(t *testing.T, dir, policy string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("letta-code's pre-commit hook runs on node, not on this machine's PATH")
	}
	hooks := filepath.Join(dir, ".git", "hooks")
	for name, mode := range map[string]os.FileMode{"pre-commit": 0o755, "letta-memory-constraints.cjs": 0o644} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "letta", "hook", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hooks, name), data, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "letta-memory-layout-policy"), []byte(policy+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lettaCommit commits everything in the letta-code clone dir through its
// pre-commit hook (no --no-verify), as letta-code's commitMemoryPaths does;
// it returns the hook's output and whether the commit was made.
func lettaCommit(t *testing.T, dir, message string) (string, bool) {
	t.Helper()
	git(t, dir, "add", "-A")
	out, err := testgit.Try(dir, "-c", "user.name=Letta Agent", "-c", "user.email=lh@letta.com", "commit", "-q", "--allow-empty", "-m", message)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out, err == nil
}

// v2Text is a memfs v2 file of exactly n characters (name and
// description, then x).
func v2Text(rel string, n int) string {
	head := "---\nname: " + strings.TrimSuffix(filepath.Base(rel), ".md") + "\ndescription: d\n---\n"
	return head + strings.Repeat("x", n-len(head))
}

// TestLettaInterop_HookOnPeerClone (issue 29), through the binary with
// letta-code's real pre-commit hook installed in a peer clone of the
// agent's remote (memfs v2, root-marker, letta-code's defaults): what
// memfsd writes within the rules (a 20,000-character file, depth 2, three
// 18,000-character root files) is accepted by the hook at letta-code's
// next commit; every write that would take the tree past letta-code's
// tree constraints — the memory tool (depth 3, 20,001 characters, the
// fourth 18,000-character root file), a direct write (20,001 characters,
// the core over 65,536) and the shell's git commit (depth 3) — is refused
// or held, so letta-code's commits on the shared remote keep succeeding
// after each of them. The same states committed in the peer are refused
// by the hook (the check is live, not vacuous).
func TestLettaInterop_HookOnPeerClone(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lh")
	dir := memDir(home, "lh")
	peer := peerClone(t, srv, "lh")
	installLettaHook(t, peer, "root-marker")

	// letta-code's agent makes the memory v2, through its hook: memfsd's
	// default blocks (v1 front matter in system/) get system/MEMORY.md
	// and v2 front matter, or the hook refuses the switch (missing
	// required index system/MEMORY.md).
	os.WriteFile(filepath.Join(peer, "MEMORY.md"), []byte("# Memory\n"), 0o600)
	os.WriteFile(filepath.Join(peer, "system", "MEMORY.md"), []byte("# System\n"), 0o600)
	for _, rel := range []string{"system/persona.md", "system/human.md"} {
		os.WriteFile(filepath.Join(peer, rel), []byte(v2Text(rel, 120)), 0o600)
	}
	os.WriteFile(filepath.Join(peer, "prefs.md"), []byte(v2Text("prefs.md", 200)), 0o600)
	if out, ok := lettaCommit(t, peer, "letta: v2 memory"); !ok {
		t.Fatalf("letta-code's hook refused its own first commit on memfsd's remote:\n%s", out)
	}
	git(t, peer, "push", "-q", "origin", "HEAD")
	lettaTurn := func(step string) {
		t.Helper()
		waitFor(t, 15*time.Second, "memfsd pushed everything it will push ("+step+")", func() bool {
			tr := p.turn("lh")
			return tr.Status.Ahead == 0 && tr.Status.Head == tr.Status.RemoteHead
		})
		git(t, peer, "pull", "-q", "--ff-only")
		os.WriteFile(filepath.Join(peer, "letta.md"), []byte(v2Text("letta.md", 100+len(step))), 0o600)
		if out, ok := lettaCommit(t, peer, "letta: after "+step); !ok {
			t.Fatalf("after %s, letta-code's hook refuses its next commit on the shared remote:\n%s\nremote tree:\n%s", step, out,
				git(t, srv.RepoDir("lh"), "ls-tree", "-r", "-l", "main"))
		}
		git(t, peer, "push", "-q", "origin", "HEAD")
		p.turn("lh")
	}
	waitFor(t, 10*time.Second, "letta-code's memory pulled", func() bool {
		p.turn("lh")
		_, err := os.Stat(filepath.Join(dir, "prefs.md"))
		return err == nil
	})

	// Within the rules: the tool, a direct write, a shell commit, and the
	// core memory up to three 18,000-character root files (and the rest).
	memory := func(input string) (string, bool) {
		return p.memory("lh", `{"dialect":"letta-code",`+input[1:])
	}
	if out, isErr := memory(`{"command":"create","reason":"note","file_path":"notes.md","description":"Notes","file_text":"a note\n"}`); isErr {
		t.Fatalf("a valid create: %s", out)
	}
	os.WriteFile(filepath.Join(dir, "direct.md"), []byte(v2Text("direct.md", 300)), 0o600)
	// (staged before the files are in the folder: the daemon does not
	// commit them as direct writes first)
	os.MkdirAll(filepath.Join(dir, "projects"), 0o700)
	stage(t, dir, "projects/MEMORY.md", "# Projects\n")
	stage(t, dir, "projects/plan.md", v2Text("plan.md", 20000))
	git(t, dir, "commit", "-qm", "shell: projects")
	for i, rel := range []string{"core1.md", "core2.md", "core3.md"} {
		if i != 1 {
			os.WriteFile(filepath.Join(dir, rel), []byte(v2Text(rel, 18000)), 0o600)
			continue
		}
		if out, isErr := memory(`{"command":"create","reason":"core","file_path":"` + rel + `","description":"d","file_text":` + quoteJSON(strings.Repeat("y", 17900)) + `}`); isErr {
			t.Fatalf("create %s: %s", rel, out)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			o, _ := gitTry(dir, "log", "--stat", "--format=%h %an %s", "-8")
			t.Logf("memfsd's history:\n%s", o)
		}
	})
	waitFor(t, 15*time.Second, "memfsd's writes within the rules on the remote", func() bool {
		p.turn("lh")
		files := git(t, srv.RepoDir("lh"), "ls-tree", "-r", "--name-only", "main")
		return strings.Contains(files, "direct.md") && strings.Contains(files, "projects/plan.md") && strings.Contains(files, "core1.md") && strings.Contains(files, "core2.md") && strings.Contains(files, "core3.md")
	})
	lettaTurn("memfsd's writes within the rules")

	// Past the rules, each route: refused or held, never pushed.
	if out, isErr := memory(`{"command":"create","reason":"index","file_path":"projects/a/MEMORY.md","file_text":"# A\n"}`); isErr {
		t.Fatalf("a depth-2 index: %s", out)
	}
	for _, c := range []struct{ input, want string }{
		{`{"command":"create","reason":"deep","file_path":"projects/a/b/MEMORY.md","file_text":"# B\n"}`, "projects/a/b/MEMORY.md: depth 3 exceeds maxDepth 2"},
		{`{"command":"create","reason":"big","file_path":"projects/big.md","description":"d","file_text":` + quoteJSON(strings.Repeat("z", 20001)) + `}`, "exceeds 20000 from maxFileCharacters"},
		{`{"command":"create","reason":"core","file_path":"core4.md","description":"d","file_text":` + quoteJSON(strings.Repeat("y", 17900)) + `}`, "exceeds 65536 from maxCoreMemoryCharacters"},
	} {
		out, isErr := memory(c.input)
		if !isErr || !strings.Contains(out, c.want) {
			t.Fatalf("%.80s: %q (error %v), want refused with %q", c.input, out, isErr, c.want)
		}
	}
	lettaTurn("the tool's refused writes")
	os.WriteFile(filepath.Join(dir, "projects", "big.md"), []byte(v2Text("big.md", 20001)), 0o600)
	os.WriteFile(filepath.Join(dir, "core4.md"), []byte(v2Text("core4.md", 18000)), 0o600)
	os.MkdirAll(filepath.Join(dir, "projects", "a", "b"), 0o700)
	os.WriteFile(filepath.Join(dir, "projects", "a", "b", "MEMORY.md"), []byte("# B\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "projects", "a", "b", "c.md"), []byte(v2Text("c.md", 100)), 0o600)
	git(t, dir, "add", "projects/a")
	git(t, dir, "commit", "-qm", "shell: depth 3")
	var st struct {
		ConstraintsHeld []struct {
			Path     string   `json:"path"`
			Problems []string `json:"problems"`
		} `json:"constraints_held"`
	}
	held := func() map[string]string {
		st.ConstraintsHeld = nil
		p.get("/v1/agents/lh/status", &st)
		m := map[string]string{}
		for _, h := range st.ConstraintsHeld {
			m[h.Path] = strings.Join(h.Problems, "; ")
		}
		return m
	}
	waitFor(t, 15*time.Second, "the direct writes and the shell's commit held", func() bool {
		p.call("POST", "/v1/agents/lh/turn?wait=1s", "", nil)
		h := held()
		return strings.Contains(h["projects/big.md"], "20001 characters exceeds 20000") && strings.Contains(h["core4.md"], "exceeds 65536") &&
			strings.Contains(h["projects/a/b/c.md"], "depth 3 exceeds maxDepth 2")
	})
	remote := git(t, srv.RepoDir("lh"), "ls-tree", "-r", "--name-only", "main")
	for _, f := range []string{"projects/big.md", "projects/a/b/", "core4.md"} {
		if strings.Contains(remote, f) {
			t.Fatalf("the remote got %s, past letta-code's rules:\n%s\nheld: %v", f, remote, held())
		}
	}
	lettaTurn("the held direct writes and shell commit")

	// The hook is live: the same states committed in the peer are refused.
	for _, c := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"projects/big.md": v2Text("big.md", 20001)}, "projects/big.md: 20001 characters exceeds 20000 from maxFileCharacters"},
		{map[string]string{"core4.md": v2Text("core4.md", 18000)}, "exceeds 65536 from maxCoreMemoryCharacters"},
		{map[string]string{"projects/a/b/MEMORY.md": "# B\n", "projects/a/b/c.md": v2Text("c.md", 100)}, "projects/a/b/c.md: depth 3 exceeds maxDepth 2"},
	} {
		for rel, text := range c.files {
			os.MkdirAll(filepath.Dir(filepath.Join(peer, rel)), 0o700)
			os.WriteFile(filepath.Join(peer, rel), []byte(text), 0o600)
		}
		out, ok := lettaCommit(t, peer, "letta: past the rules")
		if ok || !strings.Contains(out, c.want) {
			t.Fatalf("letta-code's hook on %v: committed %v, said:\n%s\nwant %q", c.files, ok, out, c.want)
		}
		git(t, peer, "reset", "-q", "--hard", "HEAD")
		git(t, peer, "clean", "-qfd")
	}
}
