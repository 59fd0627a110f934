package memtool_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/memtool"
)

// snapshot is a folder's files and their bytes (not descended into links).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(data)
		return nil
	})
	return out
}

// TestTool_SymlinkSwapNeverEscapes: while another thread swaps the folder
// notes/ with a symbolic link to a folder outside the memory folder, again
// and again (renameat2 RENAME_EXCHANGE, as an agent's shell can), the six
// commands run on paths under /memories/notes/ in a loop. Each either acts
// inside the memory folder or is refused: no file outside is created,
// changed or removed, and no view answers with outside bytes or names.
func TestTool_SymlinkSwapNeverEscapes(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "memory")
	outside := filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(dir, "notes"), 0o700)
	os.MkdirAll(outside, 0o700)
	for name, content := range map[string]string{
		"secret.md": "OUTSIDE SECRET\n", "edit.md": "OUTSIDE edit alpha\n", "victim.md": "OUTSIDE victim\n",
		"mv.md": "OUTSIDE mv\n", "OUTSIDE-only.md": "OUTSIDE\n",
	} {
		os.WriteFile(filepath.Join(outside, name), []byte(content), 0o600)
	}
	for name, content := range map[string]string{
		"secret.md": "inside secret\n", "edit.md": "inside edit alpha\n", "victim.md": "inside victim\n", "mv.md": "inside mv\n",
	} {
		os.WriteFile(filepath.Join(dir, "notes", name), []byte(content), 0o600)
	}
	os.Symlink(outside, filepath.Join(dir, "swap"))
	before := snapshot(t, outside)

	tool := &memtool.Tool{Dir: dir, CommitHardens: true, Commit: func([]string, string) (string, error) { return "", nil }}
	run := func(in memtool.Input) memtool.Result { return tool.Run(in) }
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }

	var stop atomic.Bool
	var swaps atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, b := filepath.Join(dir, "notes"), filepath.Join(dir, "swap")
		for !stop.Load() {
			if unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	var calls, refused, leaked int
	var leakedSample string
	answers := map[string]int{} // refusals by their first words
	check := func(res memtool.Result) {
		calls++
		if res.IsError {
			refused++
			answers[res.Content[:min(len(res.Content), 48)]]++
		}
		if strings.Contains(res.Content, "OUTSIDE") {
			leaked++
			leakedSample = res.Content
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		check(run(memtool.Input{Command: "create", Path: fmt.Sprintf("/memories/notes/c-%d.md", i), FileText: str("created\n")}))
		check(run(memtool.Input{Command: "str_replace", Path: "/memories/notes/edit.md", OldStr: str("alpha"), NewStr: str("beta")}))
		check(run(memtool.Input{Command: "str_replace", Path: "/memories/notes/edit.md", OldStr: str("beta"), NewStr: str("alpha")}))
		check(run(memtool.Input{Command: "insert", Path: "/memories/notes/edit.md", InsertLine: num(0), InsertText: str("x")}))
		check(run(memtool.Input{Command: "view", Path: "/memories/notes/secret.md"}))
		check(run(memtool.Input{Command: "view", Path: "/memories/notes"}))
		check(run(memtool.Input{Command: "view", Path: "/memories"}))
		check(run(memtool.Input{Command: "delete", Path: "/memories/notes/victim.md"}))
		check(run(memtool.Input{Command: "create", Path: "/memories/notes/victim.md", FileText: str("inside victim\n")}))
		check(run(memtool.Input{Command: "rename", OldPath: "/memories/notes/mv.md", NewPath: "/memories/notes/mv2.md"}))
		check(run(memtool.Input{Command: "rename", OldPath: "/memories/notes/mv2.md", NewPath: "/memories/notes/mv.md"}))
	}
	stop.Store(true)
	<-done

	after := snapshot(t, outside)
	var created, changed, removed []string
	for name, content := range after {
		if old, ok := before[name]; !ok {
			created = append(created, name)
		} else if old != content {
			changed = append(changed, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			removed = append(removed, name)
		}
	}
	t.Logf("%d calls (%d refused), %d swaps; outside: %d created, %d changed, %d removed; %d answers with outside bytes",
		calls, refused, swaps.Load(), len(created), len(changed), len(removed), leaked)
	t.Logf("refusals: %v", answers)
	if swaps.Load() < 100 {
		t.Fatalf("only %d swaps: the race was not run", swaps.Load())
	}
	if len(created)+len(changed)+len(removed) > 0 {
		t.Errorf("the tool acted outside the memory folder: created %v, changed %v, removed %v", head(created), changed, removed)
	}
	if leaked > 0 {
		t.Errorf("%d answers held outside bytes or names, e.g. %q", leaked, leakedSample)
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// TestTool_LinksTheAgentPlaced: a link at the end of a path that leads
// inside the folder is read where it leads (as before); one that leads
// outside is refused for every command; a link on the way that leads
// inside is followed as the reference handler does (acts go by the path it
// leads to, which passes no link); a folder view lists no link and never
// what a link leads to. Before, a view of /memories listed the files of an
// outside folder that a link in the memory folder pointed to.
func TestTool_LinksTheAgentPlaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.dir), "outside")
	os.MkdirAll(outside, 0o700)
	os.WriteFile(filepath.Join(outside, "passwd"), []byte("OUTSIDE root:x:0:0\n"), 0o600)
	e.expect(`{"command":"create","path":"/memories/notes/a.md","file_text":"inside a\n"}`, "File created successfully at: /memories/notes/a.md", false)
	os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(e.dir, "pw.md"))
	os.Symlink(outside, filepath.Join(e.dir, "out"))
	os.Symlink("notes/a.md", filepath.Join(e.dir, "in.md"))
	os.Symlink("notes", filepath.Join(e.dir, "alias"))

	res := e.run(`{"command":"view","path":"/memories"}`)
	if strings.Contains(res.Content, "passwd") || strings.Contains(res.Content, "/memories/out") || strings.Contains(res.Content, "/memories/alias") || strings.Contains(res.Content, "in.md") {
		t.Fatalf("the listing shows links or what they lead to:\n%s", res.Content)
	}
	if !strings.Contains(res.Content, "\t/memories/notes/a.md") {
		t.Fatalf("the listing lacks notes/a.md:\n%s", res.Content)
	}
	escape := "Path would escape /memories directory via symlink"
	e.expect(`{"command":"view","path":"/memories/in.md"}`, "Here's the content of /memories/in.md with line numbers:\n     1\tinside a\n     2\t", false)
	for _, js := range []string{
		`{"command":"view","path":"/memories/pw.md"}`,
		`{"command":"view","path":"/memories/out"}`,
		`{"command":"view","path":"/memories/out/passwd"}`,
		`{"command":"str_replace","path":"/memories/pw.md","old_str":"root","new_str":"toor"}`,
		`{"command":"insert","path":"/memories/pw.md","insert_line":0,"insert_text":"x"}`,
		`{"command":"create","path":"/memories/out/new.md","file_text":"x"}`,
		`{"command":"delete","path":"/memories/out/passwd"}`,
		`{"command":"rename","old_path":"/memories/out/passwd","new_path":"/memories/stolen.md"}`,
	} {
		e.expect(js, escape, true)
	}
	e.expect(`{"command":"view","path":"/memories/alias/a.md"}`, "Here's the content of /memories/alias/a.md with line numbers:\n     1\tinside a\n     2\t", false)
	if data, _ := os.ReadFile(filepath.Join(outside, "passwd")); string(data) != "OUTSIDE root:x:0:0\n" {
		t.Fatalf("outside file changed: %q", data)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("outside folder changed: %v", entries)
	}
}
