package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

type budgetAnswer struct {
	Tokens int    `json:"tokens"`
	Limit  int    `json:"limit"`
	Source string `json:"source"`
	Layout string `json:"layout"`
	Files  []struct {
		Path   string `json:"path"`
		Tokens int    `json:"tokens"`
	} `json:"files"`
	Error string `json:"error"`
}

func (p *proc) budget(id string) budgetAnswer {
	p.t.Helper()
	var b budgetAnswer
	if code, err := p.get("/v1/agents/"+id+"/budget", &b); err != nil || code != 200 {
		p.t.Fatalf("budget: %d %v %s", code, err, b.Error)
	}
	return b
}

// pinnedTokens is letta-code's estimate of HEAD's system/**.md, computed
// here from git's own listing: ceil(bytes / 4) per file (ASCII content).
func pinnedTokens(t *testing.T, dir string) int {
	total := 0
	for _, p := range strings.Fields(git(t, dir, "ls-tree", "-r", "--name-only", "HEAD", "system/")) {
		if strings.HasSuffix(p, ".md") {
			n := len(git(t, dir, "cat-file", "blob", "HEAD:"+p)) + 1 // git's output lost its final newline
			total += (n + 3) / 4
		}
	}
	return total
}

// TestBudget_ToolRefusedDirectWriteReminded: the pinned memory's tokens,
// estimated as letta-code does, against a budget the operator sets on
// the admin socket only (the agent's socket answers 403). A tool write
// that would pass it is refused with the sizes and changes nothing; one
// outside system/ or within the budget goes in; a direct write past it is
// committed and raises budget_exceeded (status shows it) until the agent
// shrinks the memory, which the tool always lets it do. The policy file
// system/.letta-policy.yml is the operator's: the agent's tool write and
// direct write are refused, an operator's push from another clone sets
// the budget. memfsd budget set/show, through the daemon and from disk.
func TestBudget_ToolRefusedDirectWriteReminded(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "bu")
	dir := memDir(home, "bu")

	b := p.budget("bu")
	base := pinnedTokens(t, dir)
	if b.Limit != 20000 || b.Source != "default" || b.Layout != "memfs-v1" || b.Tokens != base || len(b.Files) != 2 {
		t.Fatalf("default budget: %+v, want %d tokens of 20000 over 2 files", b, base)
	}
	// Only the operator sets it.
	var fail budgetAnswer
	if code, _ := p.call("PUT", "/v1/agents/bu/budget", `{"tokens": 999999}`, &fail); code != 403 || !strings.Contains(fail.Error, "admin socket") {
		t.Fatalf("PUT budget on the agent's socket: %d %+v", code, fail)
	}
	if code, _ := p.callOn(sockClient(agentSock(home, "bu")), "PUT", "/v1/agents/bu/budget", `{"tokens": 999999}`, &fail); code != 403 {
		t.Fatalf("PUT budget on the agent's own socket: %d %+v", code, fail)
	}
	limit := base + 100
	for _, bad := range []string{`{"tokens": -1}`, `{"tokens": 20000000}`, `{"tokens": "x"}`, `{"limit": 5}`} {
		if code, _ := p.adminCall("PUT", "/v1/agents/bu/budget", bad, &fail); code != 400 || fail.Error == "" {
			t.Fatalf("PUT budget %s: %d %+v", bad, code, fail)
		}
	}
	if code, err := p.adminCall("PUT", "/v1/agents/bu/budget", fmt.Sprintf(`{"tokens": %d}`, limit), &b); err != nil || code != 200 || b.Limit != limit || b.Source != "operator" {
		t.Fatalf("PUT budget: %d %v %+v", code, err, b)
	}

	head := git(t, dir, "rev-parse", "HEAD")
	// Front matter on every pinned file: letta-code's rules want it there.
	fm := "---\ndescription: filler for the budget test\n---\n"
	tok := func(s string) int { return (len(s) + 3) / 4 }
	create := func(path, text string) (string, bool) {
		in, _ := json.Marshal(map[string]string{"command": "create", "path": "/memories/" + path, "file_text": text})
		return p.memory("bu", string(in))
	}
	big := fm + strings.Repeat("x", 600) + "\n"
	out, isErr := create("system/big.md", big)
	want := fmt.Sprintf("Refused: the pinned memory (the files under /memories/system/, always in your context) would be about %d tokens, over its budget of %d (it is %d now).", base+tok(big), limit, base)
	if !isErr || !strings.HasPrefix(out, want) {
		t.Fatalf("create past the budget: %v %q\nwant %q", isErr, out, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "system", "big.md")); !os.IsNotExist(err) || git(t, dir, "rev-parse", "HEAD") != head {
		t.Fatalf("a refused write left a file (%v) or a commit", err)
	}
	if out, isErr := create("notes/big.md", big); isErr {
		t.Fatalf("create outside system/: %q", out)
	}
	small := fm + "a few words\n"
	if out, isErr := create("system/small.md", small); isErr {
		t.Fatalf("create within the budget: %q", out)
	}
	if got := p.budget("bu").Tokens; got != base+tok(small) {
		t.Fatalf("tokens after small.md = %d, want %d", got, base+tok(small))
	}
	if p.reminders("bu").has("budget_exceeded") {
		t.Fatal("budget_exceeded within the budget")
	}

	// A direct write past it: committed, and the agent is told.
	huge := fm + strings.Repeat("y", 2000) + "\n"
	os.WriteFile(filepath.Join(dir, "system", "huge.md"), []byte(huge), 0o600)
	waitFor(t, 10*time.Second, "direct write committed", func() bool {
		return strings.Contains(git(t, dir, "log", "-1", "--format=%s"), "system/huge.md")
	})
	var st struct {
		Budget budgetAnswer `json:"budget"`
	}
	p.get("/v1/agents/bu/status", &st)
	over := base + tok(small) + tok(huge)
	if st.Budget.Tokens != over || st.Budget.Files[0].Path != "system/huge.md" || st.Budget.Files[0].Tokens != tok(huge) {
		t.Fatalf("status budget: %+v, want %d tokens", st.Budget, over)
	}
	r := p.reminders("bu")
	if !r.has("budget_exceeded") || !strings.Contains(r.Text, fmt.Sprintf("about %d tokens, over its budget of %d", over, limit)) ||
		!strings.Contains(r.Text, fmt.Sprintf("/memories/system/huge.md (%d)", tok(huge))) {
		t.Fatalf("reminders: %s", r.Text)
	}
	// Over budget: adding is refused, shrinking is not.
	if out, isErr := p.memory("bu", `{"command":"insert","path":"/memories/system/small.md","insert_line":4,"insert_text":"more"}`); !isErr || !strings.HasPrefix(out, "Refused: the pinned memory") {
		t.Fatalf("adding while over: %v %q", isErr, out)
	}
	if out, isErr := p.memory("bu", `{"command":"str_replace","path":"/memories/system/huge.md","old_str":"`+strings.Repeat("y", 2000)+`","new_str":"short"}`); isErr {
		t.Fatalf("shrinking while over: %q", out)
	}
	if r := p.reminders("bu"); r.has("budget_exceeded") {
		t.Fatalf("budget_exceeded after shrinking: %s", r.Text)
	}
	// letta-code's tool dialect is held to the same budget.
	p.adminCall("PUT", "/v1/agents/bu/budget", fmt.Sprintf(`{"tokens": %d}`, p.budget("bu").Tokens+5), &b)
	in, _ := json.Marshal(map[string]string{"dialect": "letta-code", "command": "create", "reason": "grow", "file_path": "system/letta.md", "description": "d", "file_text": big})
	if out, isErr := p.memory("bu", string(in)); !isErr || !strings.HasPrefix(out, "Refused: the pinned memory") {
		t.Fatalf("letta-code create past the budget: %v %q", isErr, out)
	}

	// The policy file is the operator's.
	if out, isErr := p.memory("bu", `{"command":"create","path":"/memories/system/.letta-policy.yml","file_text":"token_budget: 999999\n"}`); !isErr || !strings.Contains(out, "read-only") {
		t.Fatalf("the agent's tool writes the policy: %v %q", isErr, out)
	}
	policy := filepath.Join(dir, "system", ".letta-policy.yml")
	os.WriteFile(policy, []byte("token_budget: 999999\n"), 0o600)
	waitFor(t, 10*time.Second, "the agent's policy file undone", func() bool {
		_, err := os.Stat(policy)
		return os.IsNotExist(err)
	})
	p.adminCall("PUT", "/v1/agents/bu/budget", `{"tokens": 0}`, &b) // back to the policy or default
	if b.Source != "default" || b.Limit != 20000 {
		t.Fatalf("after dropping the operator's setting: %+v", b)
	}
	p.turn("bu")
	peer := peerClone(t, srv, "bu")
	os.WriteFile(filepath.Join(peer, "system", ".letta-policy.yml"), []byte("# set by the operator\ntoken_budget: 30_000\n"), 0o644)
	git(t, peer, "add", ".")
	git(t, peer, "commit", "-q", "-m", "operator: budget")
	git(t, peer, "push", "-q")
	p.turn("bu")
	waitFor(t, 20*time.Second, "the operator's policy pulled", func() bool {
		p.turn("bu")
		b := p.budget("bu")
		return b.Source == "policy" && b.Limit == 30000
	})

	// memfsd budget, through the daemon, then from disk.
	code, out, errOut := runSplit(t, "budget", "set", "--home", home, "--agent", "bu", "--tokens", "50")
	if code != 0 || !strings.Contains(out, "of 50 (OVER BUDGET, budget from operator") {
		t.Fatalf("budget set: %d %q %q", code, out, errOut)
	}
	if !p.reminders("bu").has("budget_exceeded") {
		t.Fatal("no budget_exceeded under an operator's budget of 50")
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runSplit(t, "budget", "set", "--home", home, "--agent", "bu", "--tokens", "0")
	if code != 0 || !strings.Contains(out, "of 30000 (within budget, budget from policy") {
		t.Fatalf("budget set from disk: %d %q %q", code, out, errOut)
	}
	code, out, _ = runSplit(t, "budget", "show", "--home", home, "--agent", "bu")
	if code != 0 || !strings.Contains(out, "system/persona.md") {
		t.Fatalf("budget show from disk: %d %q", code, out)
	}
	code, out, _ = runSplit(t, "status", "--home", home, "--agent", "bu", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Budget.Limit != 30000 {
		t.Fatalf("status --json from disk: %v %q", err, out)
	}
}
