package agent_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/internal/gitserver"
)

// untrackableCases are paths git cannot track, each made the way an
// agent's shell would; skipped is the path the agent is told about.
var untrackableCases = []struct {
	name    string
	make    func(t *testing.T, dir string)
	skipped string
}{
	{"dotgit file", func(t *testing.T, dir string) { put(t, dir, "sub/.git", "gitdir: ../x\n") }, "sub/.git"},
	{"dotgit folder", func(t *testing.T, dir string) {
		put(t, dir, "sub/.git/config", "[core]\n")
		put(t, dir, "sub/.git/HEAD", "ref: refs/heads/main\n")
	}, "sub/.git"},
	{"upper case at the root", func(t *testing.T, dir string) { put(t, dir, ".GIT", "x\n") }, ".GIT"},
	{"mixed case deep", func(t *testing.T, dir string) { put(t, dir, "Deep/x/.Git/config", "[core]\n") }, "Deep/x/.Git"},
	{"nested repository", func(t *testing.T, dir string) {
		os.MkdirAll(filepath.Join(dir, "sub2"), 0o700)
		git(t, filepath.Join(dir, "sub2"), "init", "-q")
		put(t, dir, "sub2/inside.md", "in a nested repository\n")
		git(t, filepath.Join(dir, "sub2"), "add", "inside.md")
		git(t, filepath.Join(dir, "sub2"), "commit", "-qm", "nested")
	}, "sub2/.git"},
	{"windows spelling", func(t *testing.T, dir string) { put(t, dir, "w/git~1", "x\n") }, "w/git~1"},
}

func put(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

var dotGitPart = regexp.MustCompile(`(?i)(^|/)(\.git|git~1)(/|$)`)

// checkPushedWithout checks the remote has beside.md and d/other.md and no
// untrackable path, and git fsck --strict is clean on it.
func checkPushedWithout(t *testing.T, srv *gitserver.Server, id string) {
	t.Helper()
	bare := srv.RepoDir(id)
	files := git(t, bare, "ls-tree", "-r", "--name-only", "main")
	for _, want := range []string{"beside.md", "d/other.md"} {
		if !strings.Contains("\n"+files+"\n", "\n"+want+"\n") {
			t.Errorf("%s not pushed; remote has:\n%s", want, files)
		}
	}
	for _, f := range strings.Split(files, "\n") {
		if dotGitPart.MatchString(f) {
			t.Errorf("untrackable %q reached the remote", f)
		}
	}
	git(t, bare, "fsck", "--strict")
}

func checkTold(t *testing.T, a *agent.Agent, skipped string) {
	t.Helper()
	st := a.Status(true)
	if st.State != agent.StateClean || st.LastError != nil {
		t.Errorf("state %s, last error %+v; want clean", st.State, st.LastError)
	}
	if len(st.PathSkipped) != 1 || st.PathSkipped[0].Path != skipped {
		t.Errorf("path_skipped = %+v, want %s", st.PathSkipped, skipped)
	}
	text := ""
	for _, r := range a.Reminders() {
		if r.Kind == "path_skipped" {
			text = r.Text
		}
	}
	if !strings.Contains(text, "/memories/"+skipped+" ") && !strings.Contains(text, "/memories/"+skipped+".") {
		t.Errorf("path_skipped reminder does not name %s: %q", skipped, text)
	}
}

// A sync (memfsd sync's path: scan, commit, push) with one untrackable
// path in the folder commits and pushes every other file. Before the one
// rule, the scan handed .GIT, sub/.git (a file), .Git/config, w/git~1 to
// the commit, whose "bad path" failed the whole sync.
func TestAgent_SyncSkipsUntrackable(t *testing.T) {
	t.Parallel()
	for i, c := range untrackableCases {
		t.Run(c.name, func(t *testing.T) {
			srv := gitserver.New(t, token)
			cfg := newConfig(t, srv, token, nil)
			id := "u" + string(rune('a'+i))
			a, err := open(t, cfg, id)
			if err != nil {
				t.Fatal(err)
			}
			c.make(t, a.Dir())
			put(t, a.Dir(), "beside.md", "beside\n")
			put(t, a.Dir(), "d/other.md", "other\n")
			if _, err := a.Sync(context.Background(), agent.SyncOptions{}); err != nil {
				t.Fatalf("sync: %v", err)
			}
			checkPushedWithout(t, srv, id)
			checkTold(t, a, c.skipped)
		})
	}
}

// The watcher's path: the untrackable path is handed to the pipeline with
// the files written beside it in one batch; they are committed, it is
// skipped, and a turn pushes. Before, the batch failed as a whole and was
// re-queued for ever.
func TestAgent_FlushSkipsUntrackable(t *testing.T) {
	t.Parallel()
	for i, c := range untrackableCases {
		t.Run(c.name, func(t *testing.T) {
			srv := gitserver.New(t, token)
			cfg := newConfig(t, srv, token, nil)
			id := "w" + string(rune('a'+i))
			a, err := agent.New(cfg, id)
			if err != nil {
				t.Fatal(err)
			}
			a.Background, a.Debounce = true, 10*time.Millisecond
			if err := a.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close(context.Background()) })
			if tr := a.Turn(nil, 30*time.Second); tr.Outcome == agent.OutcomeFailed {
				t.Fatalf("first turn: %+v", tr)
			}
			c.make(t, a.Dir())
			put(t, a.Dir(), "beside.md", "beside\n")
			put(t, a.Dir(), "d/other.md", "other\n")
			// Every file written, as a watcher without the rule would hand
			// them (paths inside a .git folder too), and the skipped path.
			a.Changed(c.skipped)
			filepath.WalkDir(a.Dir(), func(p string, d fs.DirEntry, err error) error {
				rel, _ := filepath.Rel(a.Dir(), p)
				if rel == ".git" {
					return filepath.SkipDir
				}
				if err == nil && !d.IsDir() {
					a.Changed(filepath.ToSlash(rel))
				}
				return nil
			})
			deadline := time.Now().Add(10 * time.Second)
			for {
				out, _ := gitErrIn(a.Dir(), "ls-tree", "-r", "--name-only", "HEAD")
				if strings.Contains(out, "beside.md") && strings.Contains(out, "d/other.md") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not committed: HEAD has\n%s", out)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if tr := a.Turn(nil, 30*time.Second); tr.Outcome != agent.OutcomePushed {
				t.Fatalf("turn: %+v", tr)
			}
			checkPushedWithout(t, srv, id)
			checkTold(t, a, c.skipped)
			if st := a.Status(false); len(st.PathSkipped) != 1 || st.PathSkipped[0].Path != c.skipped {
				t.Errorf("status without a scan: path_skipped = %+v", st.PathSkipped)
			}
		})
	}
}
