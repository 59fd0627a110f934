package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// lettaCLI runs `memfsd memory` with stdin; its exit code and output.
func lettaCLI(t *testing.T, srv *gitserver.Server, home, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"memory", "--home", home, "--base-url", srv.URL}, args...)...)
	cmd.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// lettaStep is one letta-code call and the commit it must make.
type lettaStep struct {
	input, subject, reason string
	args                   []string // the CLI's flags beyond --agent
}

// lettaScenario is every letta-code command and a three-file patch (add,
// update, delete), as JSON inputs with the commits they must make.
func lettaScenario() []lettaStep {
	patch := quoteJSON("*** Begin Patch\n" +
		"*** Add File: notes/ideas.md\n+an idea\n" +
		"*** Update File: notes/todo.md\n@@\n-- call Bob\n+- call Alice\n" +
		"*** Delete File: notes/old.md\n" +
		"*** End Patch\n")
	return []lettaStep{
		// Explicit dialect in the body.
		{input: `{"dialect":"letta-code","command":"create","reason":"Track todos","file_path":"notes/todo.md","description":"Todos","file_text":"- call Bob\n"}`,
			subject: "memory: create notes/todo.md", reason: "Track todos"},
		// Told by its field names.
		{input: `{"command":"create","reason":"Keep old","file_path":"notes/old","description":"Old","file_text":"old\n"}`,
			subject: "memory: create notes/old.md", reason: "Keep old"},
		{input: `{"command":"str_replace","reason":"Fix name","file_path":"notes/todo","old_string":"Bob","new_string":"Bobby"}`,
			subject: "memory: str_replace notes/todo.md", reason: "Fix name"},
		{input: `{"command":"insert","reason":"Add milk","file_path":"notes/todo.md","insert_line":1,"insert_text":"- buy milk"}`,
			subject: "memory: insert notes/todo.md", reason: "Add milk"},
		{input: `{"command":"str_replace","reason":"Undo name","file_path":"notes/todo","old_string":"Bobby","new_string":"Bob"}`,
			subject: "memory: str_replace notes/todo.md", reason: "Undo name"},
		{input: `{"command":"update_description","reason":"Clarify","file_path":"notes/todo.md","description":"Things to do"}`,
			subject: "memory: update_description notes/todo.md", reason: "Clarify"},
		// A rename names no letta-only field: the flag or "dialect" says it.
		{input: `{"command":"rename","reason":"Move","old_path":"notes/old.md","new_path":"archive/old.md"}`, args: []string{"--dialect", "letta-code"},
			subject: "memory: rename notes/old.md -> archive/old.md", reason: "Move"},
		{input: `{"command":"rename","reason":"Back","old_path":"archive/old.md","new_path":"notes/old.md"}`, args: []string{"--dialect", "letta-code"},
			subject: "memory: rename archive/old.md -> notes/old.md", reason: "Back"},
		{input: `{"tool":"memory_apply_patch","reason":"Reorganise","input":` + patch + `}`,
			subject: "memory: apply_patch notes/ideas.md, notes/todo.md, notes/old.md", reason: "Reorganise"},
		{input: `{"command":"delete","reason":"Done","file_path":"notes/ideas.md"}`,
			subject: "memory: delete notes/ideas.md", reason: "Done"},
	}
}

func quoteJSON(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// checkLettaFiles checks the folder after lettaScenario.
func checkLettaFiles(t *testing.T, dir string) {
	t.Helper()
	todo, _ := os.ReadFile(filepath.Join(dir, "notes/todo.md"))
	if string(todo) != "---\ndescription: Things to do\n---\n- buy milk\n- call Alice\n" {
		t.Fatalf("notes/todo.md = %q", todo)
	}
	for _, gone := range []string{"notes/old.md", "notes/ideas.md", "archive/old.md"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", gone, err)
		}
	}
	git(t, dir, "fsck", "--strict")
}

// checkStep checks that a step made exactly one commit with its subject
// and the reason as the body.
func checkStep(t *testing.T, dir string, before int, s lettaStep, out string) {
	t.Helper()
	if n := commitCount(t, dir, "HEAD"); n != before+1 {
		t.Fatalf("%s: %d commits, want 1", s.input, n-before)
	}
	if got := git(t, dir, "log", "-1", "--format=%s"); got != s.subject {
		t.Fatalf("%s: subject %q, want %q", s.input, got, s.subject)
	}
	if got := strings.TrimSpace(git(t, dir, "log", "-1", "--format=%b")); got != s.reason {
		t.Fatalf("%s: body %q, want the reason %q", s.input, got, s.reason)
	}
	short := strings.TrimSpace(git(t, dir, "rev-parse", "--short=7", "HEAD"))
	if !strings.Contains(out, "committed ("+short+"); harness will sync after the turn.") {
		t.Fatalf("%s: answered %q", s.input, out)
	}
}

// Every letta-code command and a three-file memory_apply_patch through the
// API: one commit each, the reason as its body, memfsd's subject.
func TestDialect_LettaCodeThroughAPI(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lc")
	dir := memDir(home, "lc")
	for _, s := range lettaScenario() {
		route := "/v1/agents/lc/memory"
		if len(s.args) > 0 {
			route += "?dialect=letta-code"
		}
		before := commitCount(t, dir, "HEAD")
		var res struct {
			Content string `json:"content"`
			IsError bool   `json:"is_error"`
		}
		if code, err := p.call("POST", route, s.input, &res); err != nil || code != 200 || res.IsError {
			t.Fatalf("%s: %d %v %q", s.input, code, err, res.Content)
		}
		checkStep(t, dir, before, s, res.Content)
	}
	checkLettaFiles(t, dir)
	// Read-only blocks: refused, nothing written; a patch touching one is
	// refused whole.
	before := commitCount(t, dir, "HEAD")
	for input, want := range map[string]string{
		`{"command":"str_replace","reason":"r","file_path":"system/persona.md","old_string":"I am","new_string":"I was"}`:                                                        "memory: system/persona.md is read_only and cannot be modified",
		`{"tool":"memory_apply_patch","reason":"r","input":` + quoteJSON("*** Begin Patch\n*** Add File: notes/x.md\n+x\n*** Delete File: system/human.md\n*** End Patch") + `}`: "memory_apply_patch: system/human.md is read_only and cannot be modified",
	} {
		if out, isErr := p.memory("lc", input); !isErr || out != want {
			t.Fatalf("%s: %q (error %v), want %q", input, out, isErr, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "notes/x.md")); !os.IsNotExist(err) {
		t.Fatal("the refused patch added notes/x.md")
	}
	if n := commitCount(t, dir, "HEAD"); n != before {
		t.Fatalf("refused calls made %d commits", n-before)
	}
	if tr := p.turn("lc"); tr.Outcome != "pushed" {
		t.Fatalf("turn = %+v", tr)
	}
}

// The same through `memfsd memory --dialect letta-code`, with a daemon
// (the call goes through it) and without one (directly on the folder);
// an idempotency key applies a letta-code call once.
func TestDialect_LettaCodeThroughCLI(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "lc")
	dir := memDir(home, "lc")
	steps := lettaScenario()
	run := func(s lettaStep) {
		t.Helper()
		args := append([]string{"--agent", "lc"}, s.args...)
		if len(s.args) == 0 {
			args = append(args, "--dialect", "letta-code")
		}
		input := s.input
		if strings.HasPrefix(input, `{"tool":"memory_apply_patch",`) {
			// The flag instead of the field.
			input = "{" + strings.TrimPrefix(input, `{"tool":"memory_apply_patch",`)
			args = append(args, "--tool", "memory_apply_patch")
		}
		before := commitCount(t, dir, "HEAD")
		code, out := lettaCLI(t, srv, home, input, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", s.input, code, out)
		}
		checkStep(t, dir, before, s, out)
	}
	for _, s := range steps[:5] {
		run(s)
	}
	// Read-only, through the daemon: exit 1, letta-code's words.
	if code, out := lettaCLI(t, srv, home, `{"command":"delete","reason":"r","file_path":"system/human.md"}`, "--agent", "lc", "--dialect", "letta-code"); code != 1 || strings.TrimSpace(out) != "memory: system/human.md is read_only and cannot be modified" {
		t.Fatalf("read-only delete: exit %d %q", code, out)
	}
	// An idempotency key: the second call answers the first answer.
	key := []string{"--agent", "lc", "--dialect", "letta-code", "--idempotency-key", "toolu_letta_1"}
	in := `{"command":"create","reason":"Once","file_path":"notes/once.md","description":"Once"}`
	before := commitCount(t, dir, "HEAD")
	_, first := lettaCLI(t, srv, home, in, key...)
	_, again := lettaCLI(t, srv, home, in, key...)
	if first != again || commitCount(t, dir, "HEAD") != before+1 {
		t.Fatalf("idempotent call: %q then %q, %d commits", first, again, commitCount(t, dir, "HEAD")-before)
	}
	if msg := git(t, dir, "log", "-1", "--format=%B"); !strings.Contains(msg, "Once\n\nMemory-Call: toolu_letta_1") {
		t.Fatalf("message:\n%s", msg)
	}
	// The rest with no daemon: directly on the folder.
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps[5:] {
		run(s)
	}
	checkLettaFiles(t, dir)
	if code, out := lettaCLI(t, srv, home, `{"reason":"r","input":`+quoteJSON("*** Begin Patch\n*** Update File: system/persona.md\n@@\n-I am a helpful assistant\n+I am free\n*** End Patch")+`}`, "--agent", "lc"); code != 1 || !strings.Contains(out, "memory_apply_patch: system/persona.md is read_only and cannot be modified") {
		t.Fatalf("read-only patch, direct: exit %d %q", code, out)
	}
}
