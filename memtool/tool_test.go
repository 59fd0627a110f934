package memtool_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/fakesecret"
	"github.com/memfsd/memfsd/memtool"
)

type env struct {
	t    *testing.T
	dir  string
	repo *gitmem.Repo
	tool *memtool.Tool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	// The default blocks, as an initialised memory has them.
	return newEnvWith(t, blocks.Defaults(), "init")
}

// newEnvWith is a memory folder holding files (committed with message),
// and the tool on it.
func newEnvWith(t *testing.T, files map[string]string, message string) *env {
	t.Helper()
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "memory")
	os.MkdirAll(dir, 0o700)
	r, err := gitmem.Init(dir, gitmem.Remote{}, gitmem.Options{Author: gitmem.Signature{Name: "a", Email: "a@memfsd.local"}, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var paths []string
	for p, c := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o700)
		os.WriteFile(filepath.Join(dir, p), []byte(c), 0o600)
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if _, err := r.CommitWrite(paths, message); err != nil {
		t.Fatal(err)
	}
	tool := &memtool.Tool{Dir: dir, Secrets: memtool.DefaultSecretPatterns(), Commit: func(paths []string, msg string) (string, error) {
		h, err := r.CommitWrite(paths, msg)
		if errors.Is(err, gitmem.ErrNothingToCommit) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return h.String(), nil
	}}
	return &env{t: t, dir: dir, repo: r, tool: tool}
}

func (e *env) run(js string) memtool.Result {
	e.t.Helper()
	in, err := memtool.Decode([]byte(js))
	if err != nil {
		e.t.Fatalf("decode %s: %v", js, err)
	}
	return e.tool.Run(in)
}

func (e *env) commits() int {
	out, _ := exec.Command("git", "-C", e.dir, "rev-list", "--count", "HEAD").Output()
	n := 0
	for _, c := range strings.TrimSpace(string(out)) {
		n = n*10 + int(c-'0')
	}
	return n
}

func (e *env) expect(js, want string, isErr bool) {
	e.t.Helper()
	before := e.commits()
	res := e.run(js)
	if res.Content != want || res.IsError != isErr {
		e.t.Fatalf("%s\n got: %q (error %v)\nwant: %q (error %v)", js, res.Content, res.IsError, want, isErr)
	}
	// A failed call and every view change nothing; a write is one commit.
	wantCommits := before
	if !isErr && !strings.Contains(js, `"view"`) {
		wantCommits++
	}
	if got := e.commits(); got != wantCommits {
		e.t.Fatalf("%s: %d commits after, want %d", js, got, wantCommits)
	}
}

func TestTool_ReferenceScenarios(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// create
	e.expect(`{"command":"create","path":"/memories/notes.txt","file_text":"line1\nline2\nline3\n"}`, "File created successfully at: /memories/notes.txt", false)
	e.expect(`{"command":"create","path":"/memories/notes.txt","file_text":"x"}`, "File /memories/notes.txt already exists", true)
	e.expect(`{"command":"create","path":"/memories/sub/deep/a.md","file_text":"deep\n"}`, "File created successfully at: /memories/sub/deep/a.md", false)
	// view file, range, missing
	e.expect(`{"command":"view","path":"/memories/notes.txt"}`, "Here's the content of /memories/notes.txt with line numbers:\n     1\tline1\n     2\tline2\n     3\tline3\n     4\t", false)
	e.expect(`{"command":"view","path":"/memories/notes.txt","view_range":[2,3]}`, "Here's the content of /memories/notes.txt with line numbers:\n     2\tline2\n     3\tline3", false)
	e.expect(`{"command":"view","path":"/memories/notes.txt","view_range":[3,-1]}`, "Here's the content of /memories/notes.txt with line numbers:\n     3\tline3\n     4\t", false)
	e.expect(`{"command":"view","path":"/memories/nope.txt"}`, "The path /memories/nope.txt does not exist. Please provide a valid path.", true)
	// view folder: two levels, hidden left out, sizes
	os.WriteFile(filepath.Join(e.dir, ".hidden"), []byte("h"), 0o600)
	res := e.run(`{"command":"view","path":"/memories"}`)
	wantLines := []string{
		"Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:",
		"4.0K\t/memories",
		"18B\t/memories/notes.txt",
		"4.0K\t/memories/sub/",
		"4.0K\t/memories/sub/deep/",
		"4.0K\t/memories/system/",
	}
	got := strings.Split(res.Content, "\n")
	// Directory sizes come from stat (4096 on ext4 prints "4K"); compare
	// the shape and the file lines exactly.
	if len(got) < 8 || got[0] != wantLines[0] || got[2] != wantLines[2] || strings.Contains(res.Content, ".hidden") || strings.Contains(res.Content, ".git") || strings.Contains(res.Content, "deep/a.md") {
		t.Fatalf("folder view:\n%s", res.Content)
	}
	if !strings.Contains(res.Content, "\t/memories/system/persona.md") || !strings.HasSuffix(strings.SplitN(got[3], "\t", 2)[1], "/memories/sub/") {
		t.Fatalf("folder view lacks entries:\n%s", res.Content)
	}
	// str_replace: ok, absent, several matches, missing file
	e.expect(`{"command":"str_replace","path":"/memories/notes.txt","old_str":"line2","new_str":"LINE TWO"}`,
		"The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tline1\n     2\tLINE TWO\n     3\tline3\n     4\t", false)
	e.expect(`{"command":"str_replace","path":"/memories/notes.txt","old_str":"zzz","new_str":"y"}`,
		"No replacement was performed, old_str `zzz` did not appear verbatim in /memories/notes.txt.", true)
	e.expect(`{"command":"str_replace","path":"/memories/notes.txt","old_str":"line","new_str":"y"}`,
		"No replacement was performed. Multiple occurrences of old_str `line` in lines: 1, 3. Please ensure it is unique", true)
	e.expect(`{"command":"str_replace","path":"/memories/none.txt","old_str":"a","new_str":"b"}`,
		"The path /memories/none.txt does not exist. Please provide a valid path.", true)
	// insert: ok, start, end, out of range
	e.expect(`{"command":"insert","path":"/memories/notes.txt","insert_line":1,"insert_text":"inserted\n"}`, "The file /memories/notes.txt has been edited.", false)
	e.expect(`{"command":"insert","path":"/memories/notes.txt","insert_line":0,"insert_text":"first"}`, "The file /memories/notes.txt has been edited.", false)
	e.expect(`{"command":"insert","path":"/memories/notes.txt","insert_line":5,"insert_text":"last"}`, "The file /memories/notes.txt has been edited.", false)
	if data, _ := os.ReadFile(filepath.Join(e.dir, "notes.txt")); string(data) != "first\nline1\ninserted\nLINE TWO\nline3\nlast\n" {
		t.Fatalf("after inserts: %q", data)
	}
	e.expect(`{"command":"insert","path":"/memories/notes.txt","insert_line":9,"insert_text":"x"}`,
		"Invalid `insert_line` parameter: 9. It should be within the range [0, 6].", true)
	// rename: ok, nested, missing source, existing destination
	e.expect(`{"command":"rename","old_path":"/memories/notes.txt","new_path":"/memories/archive/notes.txt"}`,
		"Successfully renamed /memories/notes.txt to /memories/archive/notes.txt", false)
	e.expect(`{"command":"rename","old_path":"/memories/sub","new_path":"/memories/moved/sub"}`,
		"Successfully renamed /memories/sub to /memories/moved/sub", false)
	e.expect(`{"command":"rename","old_path":"/memories/ghost.txt","new_path":"/memories/g2.txt"}`, "The path /memories/ghost.txt does not exist", true)
	e.expect(`{"command":"create","path":"/memories/b.txt","file_text":"b"}`, "File created successfully at: /memories/b.txt", false)
	e.expect(`{"command":"rename","old_path":"/memories/b.txt","new_path":"/memories/archive/notes.txt"}`, "The destination /memories/archive/notes.txt already exists", true)
	// delete: file, folder, missing, root in every spelling
	e.expect(`{"command":"delete","path":"/memories/b.txt"}`, "Successfully deleted /memories/b.txt", false)
	e.expect(`{"command":"delete","path":"/memories/moved"}`, "Successfully deleted /memories/moved", false)
	e.expect(`{"command":"delete","path":"/memories/missing"}`, "The path /memories/missing does not exist", true)
	for _, root := range []string{"/memories", "/memories/", "/memories/.", "/memories/archive/..", "/memories//"} {
		e.expect(`{"command":"delete","path":"`+root+`"}`, "Cannot delete the /memories directory itself", true)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "archive", "notes.txt")); err != nil {
		t.Fatal("memory lost by a refused root delete")
	}
	if st := gitStatus(e.dir); st != "?? .hidden" {
		t.Fatalf("git status after the scenarios: %q (only the hand-made .hidden may be untracked)", st)
	}
}

func gitStatus(dir string) string {
	out, _ := exec.Command("git", "-C", dir, "status", "--porcelain").CombinedOutput()
	return strings.TrimSpace(string(out))
}

func TestTool_PathAttacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.dir), "outside")
	os.MkdirAll(outside, 0o700)
	os.Symlink(outside, filepath.Join(e.dir, "link"))
	e.repo.CommitWrite([]string{"link"}, "link")
	cases := map[string]string{
		"/etc/passwd":                       "Path must start with /memories, got: /etc/passwd",
		"/memoriesX/a.md":                   "Path must start with /memories, got: /memoriesX/a.md",
		"/memories_backup/a.md":             "Path must start with /memories, got: /memories_backup/a.md",
		"/memories/../outside/a.md":         "Path /memories/../outside/a.md would escape /memories directory",
		"/memories/a/../../outside/a.md":    "Path /memories/a/../../outside/a.md would escape /memories directory",
		"/memories/%2e%2e%2foutside/a.md":   "Path /memories/%2e%2e%2foutside/a.md contains a URL-encoded character (%2e); write paths plainly",
		"/memories/a%2Fb.md":                "Path /memories/a%2Fb.md contains a URL-encoded character (%2f); write paths plainly",
		"/memories/..\\outside\\a.md":       "Path /memories/..\\outside\\a.md contains a backslash; use / between folders",
		"/memories/link/a.md":               "Path would escape /memories directory via symlink",
		"/memories/.git/config":             "Path /memories/.git/config is inside .git, which holds memory's history and is not writable or readable here",
		"/memories/x/.GIT/hooks/pre-commit": "Path /memories/x/.GIT/hooks/pre-commit is inside .git, which holds memory's history and is not writable or readable here",
	}
	for p, want := range cases {
		js := `{"command":"create","path":` + jsonString(p) + `,"file_text":"pwned"}`
		e.expect(js, want, true)
	}
	e.expect(`{"command":"create","path":"/memories/a\u0000b.md","file_text":"x"}`, `Path /memories/a\0b.md contains a NUL byte`, true)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("a write escaped: %v", entries)
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestTool_ModesAndReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(`{"command":"create","path":"/memories/p/q/f.md","file_text":"x"}`, "File created successfully at: /memories/p/q/f.md", false)
	for _, c := range []struct {
		p    string
		mode os.FileMode
	}{{"p", 0o700}, {"p/q", 0o700}, {"p/q/f.md", 0o600}} {
		fi, _ := os.Stat(filepath.Join(e.dir, c.p))
		if fi.Mode().Perm() != c.mode {
			t.Errorf("%s mode %o, want %o", c.p, fi.Mode().Perm(), c.mode)
		}
	}
	ro := "/memories/system/persona.md is read-only and cannot be modified"
	e.expect(`{"command":"str_replace","path":"/memories/system/persona.md","old_str":"helpful","new_str":"evil"}`, ro, true)
	e.expect(`{"command":"insert","path":"/memories/system/persona.md","insert_line":0,"insert_text":"x"}`, ro, true)
	e.expect(`{"command":"delete","path":"/memories/system/persona.md"}`, ro, true)
	e.expect(`{"command":"delete","path":"/memories/system"}`, "/memories/system/human.md is read-only and cannot be modified", true)
	e.expect(`{"command":"rename","old_path":"/memories/system/human.md","new_path":"/memories/h.md"}`, "/memories/system/human.md is read-only and cannot be modified", true)
	e.expect(`{"command":"rename","old_path":"/memories/p/q/f.md","new_path":"/memories/system/persona2.md"}`, "Successfully renamed /memories/p/q/f.md to /memories/system/persona2.md", false)
	// Front matter escalation: the agent can't add, remove or change read_only.
	e.expect(`{"command":"create","path":"/memories/mine.md","file_text":"---\ndescription: x\nread_only: true\n---\nbody\n"}`,
		"/memories/mine.md: the read_only key in front matter can only be changed by the operator", true)
	e.expect(`{"command":"create","path":"/memories/mine.md","file_text":"---\ndescription: x\n---\nbody\n"}`, "File created successfully at: /memories/mine.md", false)
	e.expect(`{"command":"str_replace","path":"/memories/mine.md","old_str":"description: x","new_str":"description: x\nread_only: true"}`,
		"/memories/mine.md: the read_only key in front matter can only be changed by the operator", true)
	e.expect(`{"command":"insert","path":"/memories/mine.md","insert_line":1,"insert_text":"read_only: false"}`,
		"/memories/mine.md: the read_only key in front matter can only be changed by the operator", true)
	// A file made read-only by its front matter (by the operator).
	os.WriteFile(filepath.Join(e.dir, "op.md"), []byte("---\nread_only: true\n---\nrules\n"), 0o600)
	e.repo.CommitWrite([]string{"op.md"}, "operator")
	e.expect(`{"command":"str_replace","path":"/memories/op.md","old_str":"rules","new_str":"none"}`, "/memories/op.md is read-only and cannot be modified", true)
}

func TestTool_SecretGuardAndViewCut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(`{"command":"create","path":"/memories/k.md","file_text":"key: AKIAABCDEFGHIJKLMNOP"}`,
		"Refused: the text looks like a credential (AWS access key id (AKIA)). Memory is synced to git and must never hold secrets; leave the secret out and write the rest.", true)
	key, _ := json.Marshal(fakesecret.Keys(t)[4].Text) // PEM RSA, made by ssh-keygen
	e.expect(`{"command":"create","path":"/memories/k.md","file_text":`+string(key)+`}`,
		"Refused: the text looks like a credential (private key block). Memory is synced to git and must never hold secrets; leave the secret out and write the rest.", true)
	e.tool.Secrets = nil // switched off
	e.expect(`{"command":"create","path":"/memories/k.md","file_text":"sk-abcdefghijklmnopqrstuvwxyz"}`, "File created successfully at: /memories/k.md", false)

	big := strings.Repeat("0123456789abcdefghi\n", 1000) // 20,000 characters
	os.WriteFile(filepath.Join(e.dir, "big.md"), []byte(big), 0o600)
	res := e.run(`{"command":"view","path":"/memories/big.md"}`)
	if !strings.Contains(res.Content, `read on with "view_range": [801, 1001]`) || strings.Contains(res.Content, "\t"+"0123456789abcdefghi\n   801") {
		t.Fatalf("cut view ends: %q", res.Content[len(res.Content)-200:])
	}
	if n := strings.Count(res.Content, "\n"); n > 802 {
		t.Fatalf("cut view has %d lines", n)
	}
}

func TestTool_BadInput(t *testing.T) {
	t.Parallel()
	if _, err := memtool.Decode([]byte(`{"command":"view","pth":"/memories"}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
	if _, err := memtool.Decode([]byte(`{"command":`)); err == nil {
		t.Fatal("broken JSON accepted")
	}
	e := newEnv(t)
	e.expect(`{"command":"explode","path":"/memories"}`, "Unknown command: explode", true)
	e.expect(`{"command":"create","path":"/memories/x.md"}`, "Missing required parameter `file_text` for command `create`", true)
}

func TestTool_ReadOnlyAnsweredFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(`{"command":"str_replace","path":"/memories/system/persona.md","old_str":"I","new_str":"U"}`,
		"/memories/system/persona.md is read-only and cannot be modified", true)
}

// Every write command on a read-only path answers the read-only error
// before any other (exists, missing, destination exists, ...).
func TestTool_ReadOnlyAnsweredFirstForEveryWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ro := "/memories/system/persona.md is read-only and cannot be modified"
	e.expect(`{"command":"create","path":"/memories/system/persona.md","file_text":"x"}`, ro, true)
	e.expect(`{"command":"insert","path":"/memories/system/persona.md","insert_line":0,"insert_text":"x"}`, ro, true)
	e.expect(`{"command":"delete","path":"/memories/system/persona.md"}`, ro, true)
	e.expect(`{"command":"rename","old_path":"/memories/system/persona.md","new_path":"/memories/p.md"}`, ro, true)
	e.expect(`{"command":"create","path":"/memories/a.md","file_text":"a"}`, "File created successfully at: /memories/a.md", false)
	e.expect(`{"command":"rename","old_path":"/memories/a.md","new_path":"/memories/system/persona.md"}`, ro, true)
	// A block deleted from disk is still read-only by its path.
	os.Remove(filepath.Join(e.dir, "system", "human.md"))
	e.expect(`{"command":"create","path":"/memories/system/human.md","file_text":"x"}`, "/memories/system/human.md is read-only and cannot be modified", true)
	e.expect(`{"command":"str_replace","path":"/memories/system/human.md","old_str":"a","new_str":"b"}`, "/memories/system/human.md is read-only and cannot be modified", true)
	// Front matter read_only: true makes any .md read-only, first too.
	os.WriteFile(filepath.Join(e.dir, "locked.md"), []byte("---\nread_only: true\n---\nx\n"), 0o600)
	e.expect(`{"command":"create","path":"/memories/locked.md","file_text":"x"}`, "/memories/locked.md is read-only and cannot be modified", true)
}

// A file of one line longer than the budget is cut inside that line.
func TestTool_ViewCutsALongLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := strings.Repeat("x", 20000)
	os.WriteFile(filepath.Join(e.dir, "one.md"), []byte(long), 0o600)
	res := e.run(`{"command":"view","path":"/memories/one.md"}`)
	if len(res.Content) > memtool.ViewLimit+300 || !strings.Contains(res.Content, "cut at 16000 characters inside line 1, which has 20000 characters") {
		t.Fatalf("view of a 20,000-character line: %d characters, ends %q", len(res.Content), res.Content[max(0, len(res.Content)-200):])
	}
	os.WriteFile(filepath.Join(e.dir, "two.md"), []byte(long+"\nsecond\n"), 0o600)
	res = e.run(`{"command":"view","path":"/memories/two.md"}`)
	if !strings.HasSuffix(res.Content, `read on after it with "view_range": [2, 3]]`) {
		t.Fatalf("hint: %q", res.Content[len(res.Content)-200:])
	}
	// Reading on from a later line works as before.
	res = e.run(`{"command":"view","path":"/memories/two.md","view_range":[2,-1]}`)
	if res.Content != "Here's the content of /memories/two.md with line numbers:\n     2\tsecond\n     3\t" {
		t.Fatalf("view_range after the long line: %q", res.Content)
	}
}

// A write past the front matter's limit is refused and changes nothing.
func TestTool_BlockLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(`{"command":"create","path":"/memories/short.md","file_text":"---\ndescription: kept short\nlimit: 20\nowner: ops\n---\n0123456789\n"}`,
		"File created successfully at: /memories/short.md", false)
	e.expect(`{"command":"insert","path":"/memories/short.md","insert_line":5,"insert_text":"abcdefghijklmnop"}`,
		"Exceeds 20 character limit (requested 28)", true)
	e.expect(`{"command":"str_replace","path":"/memories/short.md","old_str":"0123456789","new_str":"0123456789 and much more text"}`,
		"Exceeds 20 character limit (requested 30)", true)
	e.expect(`{"command":"create","path":"/memories/new.md","file_text":"---\nlimit: 3\n---\nfour"}`,
		"Exceeds 3 character limit (requested 4)", true)
	e.expect(`{"command":"str_replace","path":"/memories/short.md","old_str":"0123456789","new_str":"fits"}`,
		"The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     4\towner: ops\n     5\t---\n     6\tfits\n     7\t", false)
	if data, _ := os.ReadFile(filepath.Join(e.dir, "short.md")); !strings.Contains(string(data), "owner: ops") {
		t.Fatalf("unknown front-matter key lost: %q", data)
	}
}

// A secret put together across two edits is refused: the whole file is
// checked, not only the new text.
func TestTool_SecretAcrossTwoEdits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(`{"command":"create","path":"/memories/k.md","file_text":"tok: sk-A1b2\n"}`, "File created successfully at: /memories/k.md", false)
	e.expect(`{"command":"str_replace","path":"/memories/k.md","old_str":"b2","new_str":"b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7"}`,
		"Refused: the text looks like a credential (OpenAI-style key (sk-)). Memory is synced to git and must never hold secrets; leave the secret out and write the rest.", true)
}
