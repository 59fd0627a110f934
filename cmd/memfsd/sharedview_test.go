package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// seedShared creates shared repository name on srv with files (path →
// content) in one commit by an operator, as letta-code's shared-memory
// create does, and returns a clone of it.
func seedShared(t *testing.T, srv *gitserver.Server, name string, files map[string]string) string {
	t.Helper()
	seed := filepath.Join(t.TempDir(), "seed")
	git(t, filepath.Dir(seed), "clone", "-q", strings.Replace(srv.SharedURL("op", name), "http://", "http://memfsd:"+token+"@", 1), seed)
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(seed, p)), 0o755)
		os.WriteFile(filepath.Join(seed, p), []byte(c), 0o644)
	}
	git(t, seed, "add", ".")
	git(t, seed, "-c", "user.name=op", "-c", "user.email=op@x", "commit", "-qm", "create")
	git(t, seed, "push", "-q", "origin", "HEAD:main")
	return seed
}

// shell runs script with bash in dir, as the agent's shell does.
func shell(t *testing.T, dir, script string) {
	t.Helper()
	if err := shellTry(dir, script); err != nil {
		t.Fatal(err)
	}
}

// shellTry is shell for goroutines other than the test's.
func shellTry(dir, script string) error {
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bash %q: %v\n%s", script, err, out)
	}
	return nil
}

func readView(home, id, name, p string) string {
	data, err := os.ReadFile(filepath.Join(home, "agents", id, "shared", name, p))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

// TestShared_ViewWritesByPolicy: four agents of one daemon attached to
// one shared repository get the shared tip copied into their views
// (<home>/agents/<id>/shared/team) and write files there with their
// shells (`>`, `>>`, temporary file + mv): allow → commits on main by
// that agent, two agents' edits of one file merged three-way, every view
// brought to the result; a write to a read-only block is undone in the
// view; propose → a proposals/<agent>/ branch only, the view keeps the
// agent's version (the file nobody else changes); deny → undone in the view, the bytes kept, a
// reminder, nothing on any branch.
func TestShared_ViewWritesByPolicy(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	seedShared(t, srv, "team", map[string]string{
		"README.md": "team memory\n",
		"plan.md":   "line 1\nline 2\nline 3\n",
		"rules.md":  "---\ndescription: team rules\nread_only: true\n---\nbe kind\n",
	})
	p := startDaemon(t, srv, home, "--agent", "v1", "--agent", "v2", "--agent", "v3", "--agent", "v4")
	for id, w := range map[string]string{"v1": "allow", "v2": "allow", "v3": "propose", "v4": "deny"} {
		if code, err := p.adminCall("PUT", "/v1/agents/"+id+"/shared/team", `{"write":"`+w+`"}`, nil); err != nil || code != 200 {
			t.Fatalf("attach %s: %d %v", id, code, err)
		}
	}
	view := func(id string) string { return filepath.Join(home, "agents", id, "shared", "team") }
	for _, id := range []string{"v1", "v2", "v3", "v4"} {
		waitFor(t, 20*time.Second, id+"'s view holds the shared tip", func() bool {
			return readView(home, id, "team", "plan.md") == "line 1\nline 2\nline 3\n" && readView(home, id, "team", "rules.md") != ""
		})
		if fi, err := os.Stat(view(id)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s's view: %v %v, want a 0700 folder", id, fi, err)
		}
	}

	// Two allowed agents edit plan.md at once, each with its own writer;
	// v1 also creates a file and tries the read-only block.
	shell(t, view("v1"), `echo "line 4" >> plan.md; printf 'from v1\n' > notes/v1.md 2>/dev/null || { mkdir notes; printf 'from v1\n' > notes/v1.md; }; printf 'anything goes\n' > rules.md`)
	shell(t, view("v2"), `sed 's/line 1/line one/' plan.md > .plan.tmp && mv -f .plan.tmp plan.md`)
	shell(t, view("v3"), `printf 'idea\n' > idea.md; echo "from v3" >> README.md`)
	shell(t, view("v4"), `printf 'overwritten by v4\n' > README.md`)

	want := "line one\nline 2\nline 3\nline 4\n"
	defer func() {
		if t.Failed() {
			for _, id := range []string{"v1", "v2", "v3", "v4"} {
				t.Logf("DIAG %s plan=%q notes=%q", id, readView(home, id, "team", "plan.md"), readView(home, id, "team", "notes/v1.md"))
			}
			t.Logf("DIAG bare log:\n%s", git(t, srv.SharedRepoDir("team"), "log", "--all", "--format=%h %an %s %d"))
			t.Logf("DIAG bare plan: %s", git(t, srv.SharedRepoDir("team"), "show", "main:plan.md"))
		}
	}()
	for _, id := range []string{"v1", "v2", "v3", "v4"} {
		waitFor(t, 20*time.Second, id+"'s view merged", func() bool {
			return readView(home, id, "team", "plan.md") == want && readView(home, id, "team", "notes/v1.md") == "from v1\n"
		})
	}
	waitFor(t, 10*time.Second, "v1's read-only block undone in its view", func() bool {
		return strings.Contains(readView(home, "v1", "team", "rules.md"), "be kind")
	})
	waitFor(t, 10*time.Second, "v4's write undone in its view", func() bool {
		return readView(home, "v4", "team", "README.md") == "team memory\n"
	})
	// v3 proposed: its view keeps its own versions.
	time.Sleep(500 * time.Millisecond)
	if got := readView(home, "v3", "team", "idea.md"); got != "idea\n" {
		t.Fatalf("v3's view idea.md = %q, want its proposal kept", got)
	}
	if got := readView(home, "v3", "team", "README.md"); got != "team memory\nfrom v3\n" {
		t.Fatalf("v3's view README.md = %q, want its proposal kept", got)
	}
	if tr := p.turn("v1"); tr.Outcome == "failed" {
		t.Fatalf("turn: %+v", tr)
	}
	bare := srv.SharedRepoDir("team")
	if got := git(t, bare, "show", "main:plan.md"); got != strings.TrimSuffix(want, "\n") {
		t.Fatalf("main's plan.md = %q", got)
	}
	log := git(t, bare, "log", "--format=%an %s", "main")
	for _, w := range []string{"v1 memory: update plan.md", "v2 memory: update plan.md", "v1 memory: create notes/v1.md"} {
		if !strings.Contains(log, w) {
			t.Fatalf("main's log lacks %q:\n%s", w, log)
		}
	}
	if got := git(t, bare, "show", "main:rules.md"); !strings.Contains(got, "be kind") || strings.Contains(log, "rules.md") {
		t.Fatalf("a view's write reached the read-only block on main: %q\n%s", got, log)
	}
	if got := git(t, bare, "show", "main:README.md"); got != "team memory" {
		t.Fatalf("main's README.md = %q: a denied write got through", got)
	}
	if _, err := gitTry(bare, "cat-file", "-e", "main:idea.md"); err == nil {
		t.Fatal("a proposed file reached main")
	}
	branches := strings.Fields(git(t, bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposals/"))
	if len(branches) == 0 {
		t.Fatal("no proposal branch on the remote")
	}
	var proposed string
	for _, b := range branches {
		if !strings.HasPrefix(b, "proposals/v3/") || git(t, bare, "log", "-1", "--format=%an", b) != "v3" {
			t.Fatalf("branch %s: want proposals/v3/..., by v3", b)
		}
		proposed += git(t, bare, "show", "--format=", "--name-only", b) + "\n"
	}
	if !strings.Contains(proposed, "idea.md") || !strings.Contains(proposed, "README.md") {
		t.Fatalf("the proposals hold %q, want idea.md and README.md", proposed)
	}
	if all := git(t, bare, "log", "--all", "--format=%an"); strings.Contains(all, "v4") {
		t.Fatalf("a denied write reached a branch:\n%s", all)
	}
	var rem struct {
		Reminders []struct{ Kind, Text string } `json:"reminders"`
	}
	if code, err := p.get("/v1/agents/v4/reminders", &rem); err != nil || code != 200 || !strings.Contains(toJSON(rem), "shared_write_denied") || !strings.Contains(toJSON(rem), "README.md") {
		t.Fatalf("v4's reminders: %d %v %s", code, err, toJSON(rem))
	}
	// Everything the agent reads names paths as it sees them: /memories/...
	// and its view folder shared/team, never the host's, and no host
	// command.
	if txt := toJSON(rem); strings.Contains(txt, home) || !strings.Contains(txt, "/memories/README.md") || !strings.Contains(txt, "view folder shared/team") {
		t.Fatalf("v4's reminders name host paths or not the agent's: %s", txt)
	}
	for _, id := range []string{"v1", "v4"} {
		var ctx struct {
			Text string `json:"text"`
		}
		if code, err := p.get("/v1/agents/"+id+"/context", &ctx); err != nil || code != 200 {
			t.Fatalf("context %s: %d %v", id, code, err)
		}
		if strings.Contains(ctx.Text, home) || strings.Contains(ctx.Text, "memfsd memory") || !strings.Contains(ctx.Text, "view folder shared/team") {
			t.Fatalf("%s's context names a host path or command:\n%s", id, ctx.Text)
		}
	}
	rejected, _ := filepath.Glob(filepath.Join(home, "shared", "team", "memory", ".git", "memfsd", "rejected", "*view-v4*README.md"))
	// The shell's > truncates, then writes: the view may be undone at
	// each step, and each undo keeps what it took back.
	var kept []string
	for _, f := range rejected {
		data, _ := os.ReadFile(f)
		kept = append(kept, string(data))
	}
	if !slices.Contains(kept, "overwritten by v4\n") {
		t.Fatalf("v4's rejected bytes not kept: %v hold %q", rejected, kept)
	}
	// v4 swaps the folder notes/ of its view for a link out of it; v1
	// writes notes/v1.md again: nothing is written through the link.
	outside := t.TempDir()
	shell(t, view("v4"), `mv notes notes.old && ln -s `+outside+` notes`)
	shell(t, view("v1"), `printf 'from v1, again\n' > notes/v1.md`)
	waitFor(t, 20*time.Second, "v2's view has v1's new notes", func() bool {
		return readView(home, "v2", "team", "notes/v1.md") == "from v1, again\n"
	})
	time.Sleep(time.Second)
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("memfsd wrote through the link in v4's view: %v", ents)
	}
	git(t, bare, "fsck", "--strict")
	git(t, filepath.Join(home, "shared", "team", "memory"), "fsck", "--strict")
}

// TestShared_ViewWritersDuringRefresh: an allowed agent writes one file
// of its view every few milliseconds with each writer (`>`, `>>`,
// temporary file + mv) while another agent's tool edits the same file's
// top line again and again, so memfsd keeps copying the shared tip into
// the writer's view and merging its writes: every line the writer wrote
// reaches the shared remote's history.
//
// The other agent edits whatever top line the shared branch has. The
// `>` and temporary-file writers read the file, then write it back: when
// memfsd copies an edit into the view between the writer's read and its
// write (after memfsd let go of the file, so nothing makes the writer
// wait), the writer itself writes the old top line back with its new
// line, and memfsd rightly takes that as the agent's write, an undo of the
// edit indistinguishable from a deliberate one. Two shells doing the same
// on a plain disk lose the edit the same way. (The test once chained each
// edit on its own last one, "top n-1" → "top n", and failed when a writer
// had undone one early on: no memfsd loss. The loss memfsd could cause,
// a rename landing while it held the file, is pinned by
// TestSharedView_RenameUnderTheLeaseKeepsTheOtherAgentsEdit in agent.)
func TestShared_ViewWritersDuringRefresh(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"truncate", "append", "rename"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := gitserver.New(t, token)
			home := t.TempDir()
			seedShared(t, srv, "team", map[string]string{"f.md": "top 0\n\nThe agent's lines:\n"})
			p := startDaemon(t, srv, home, "--agent", "w", "--agent", "o")
			for _, id := range []string{"w", "o"} {
				if code, err := p.adminCall("PUT", "/v1/agents/"+id+"/shared/team", `{"write":"allow"}`, nil); err != nil || code != 200 {
					t.Fatalf("attach %s: %d %v", id, code, err)
				}
			}
			waitFor(t, 20*time.Second, "w's view", func() bool { return strings.HasPrefix(readView(home, "w", "team", "f.md"), "top 0") })
			stop, count := filepath.Join(home, "stop"), filepath.Join(home, "count")
			w := exec.Command("bash", "-c", agentWriters[kind])
			w.Env = append(os.Environ(), "F="+filepath.Join(home, "agents", "w", "shared", "team", "f.md"), "STOP="+stop, "COUNT="+count, "TMP="+filepath.Join(home, "f.md.tmp"))
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Process.Kill()
			// o edits back to back until it made 40 edits and the writer
			// wrote 250 lines (2-4 s on a quiet machine; 30 s at most, for
			// a loaded one), or for MEMFSD_WRITERS_SECONDS in a soak.
			soak := os.Getenv("MEMFSD_WRITERS_SECONDS") != ""
			deadline := time.Now().Add(30 * time.Second)
			if soak {
				deadline = time.Now().Add(writersSeconds())
			}
			written := func() int {
				data, _ := os.ReadFile(count)
				n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
				return n + 1
			}
			shared := filepath.Join(home, "shared", "team", "memory", "f.md")
			edits, undone, prev, began := 0, 0, 0, time.Now()
			for n := 1; time.Now().Before(deadline) && (soak || edits < 40 || written() < 250); n++ {
				data, err := os.ReadFile(shared)
				if err != nil {
					t.Fatal(err)
				}
				top, _, _ := strings.Cut(string(data), "\n")
				if top != fmt.Sprintf("top %d", prev) {
					undone++ // a writer wrote an older top line back (above)
				}
				body := fmt.Sprintf(`{"command":"str_replace","path":"/memories/f.md","old_str":%q,"new_str":"top %d\n"}`, top+"\n", n)
				if out, isErr := p.sharedTool("o", "team", body); !isErr {
					edits++
					prev = n
				} else {
					t.Logf("o's edit %d: %s", n, out) // the top line changed since it was read
				}
			}
			raced := time.Since(began)
			os.WriteFile(stop, nil, 0o600)
			if err := w.Wait(); err != nil {
				t.Fatalf("writer: %v", err)
			}
			data, _ := os.ReadFile(count)
			last, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			bare := srv.SharedRepoDir("team")
			var lost []string
			waitFor(t, 30*time.Second, "every line on the remote", func() bool {
				p.turn("w")
				seen := map[string]bool{}
				for _, l := range strings.Split(git(t, bare, "log", "-p", "--format=", "main"), "\n") {
					if strings.HasPrefix(l, "+agent-") {
						seen[l[1:]] = true
					}
				}
				lost = lost[:0]
				for i := 0; i <= last; i++ {
					if l := fmt.Sprintf("agent-%d", i); !seen[l] {
						lost = append(lost, l)
					}
				}
				return len(lost) == 0
			})
			t.Logf("%s: %d lines written, %d edits by the other agent in %s, %d times its last edit undone by the writer's read-modify-write", kind, last+1, edits, raced.Round(time.Millisecond), undone)
			if edits < 10 {
				t.Errorf("only %d edits by the other agent: the race was not run", edits)
			}
			git(t, bare, "fsck", "--strict")
		})
	}
}
