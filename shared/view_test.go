package shared_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/testgit"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/shared"
)

const token = "tok-0123456789-secret"

// sharedUnitWithView starts the unit of a shared repository "team"
// seeded with files, with agent w's view attached (allow) and holding
// them. leased(view) is the unit's viewLeased seam (set before it
// starts; view is w's view folder). It returns the unit, the shared
// clone's folder and w's view folder.
func sharedUnitWithView(t *testing.T, files map[string]string, leased func(view string)) (*shared.Unit, string, string) {
	t.Helper()
	srv := gitserver.New(t, token)
	seed := filepath.Join(t.TempDir(), "seed")
	testgit.Run(t, filepath.Dir(seed), "clone", "-q", strings.Replace(srv.SharedURL("op", "team"), "http://", "http://memfsd:"+token+"@", 1), seed)
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(seed, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testgit.Run(t, seed, "add", ".")
	testgit.Run(t, seed, "-c", "user.name=op", "-c", "user.email=op@x", "commit", "-qm", "create")
	testgit.Run(t, seed, "push", "-q", "origin", "HEAD:main")

	logs := &lockedBuffer{}
	cfg := &agent.Config{Home: filepath.Join(t.TempDir(), "home"), BaseURL: srv.URL, Token: token,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the unit's Close: clean-ups run last first
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	u, err := shared.New(cfg, "team", srv.SharedURL("op", "team"))
	if err != nil {
		t.Fatal(err)
	}
	u.Background, u.Debounce = true, 20*time.Millisecond
	view := cfg.ViewDir("w", "team")
	shared.SetViewLeased(u, func() { leased(view) })
	if err := u.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close(context.Background()) })
	if err := u.AttachView("w", shared.WriteAllow); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		poll(t, 20*time.Second, "w's view holds "+p, func() bool {
			data, _ := os.ReadFile(filepath.Join(view, p))
			return string(data) == c
		})
	}
	return u, filepath.Join(cfg.SharedDir("team"), "memory"), view
}

// renameOnce is a leased seam that, the first time it runs, renames a
// temporary file holding data over rel in the view, as an agent's editor
// does, then closes done.
func renameOnce(t *testing.T, rel, data string, done chan struct{}) func(view string) {
	var once sync.Once
	return func(view string) {
		once.Do(func() {
			tmp := filepath.Join(filepath.Dir(view), ".edit.tmp")
			if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
				t.Error(err)
			}
			if err := os.Rename(tmp, filepath.Join(view, rel)); err != nil {
				t.Error(err)
			}
			close(done)
		})
	}
}

// waitDone waits for done (the seam ran).
func waitDone(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the unit never leased the file in w's view")
	}
}

// An agent's writer that renames a temporary file over a view file (an
// editor, `sed > tmp && mv tmp f`) may do so while the shared unit holds
// the file's lease to copy a new tip into it: a rename opens nothing, so
// it does not wait for the lease, and the unit's in-place write goes into
// the file the rename displaced. The view never got the new tip's
// version; the agent's file was made from the version before it. Before
// the fix the unit recorded the new version as given anyway, so the
// agent's write was merged against it and undid the other agent's edit
// (the tip's top line went back to "top 0"). Now the unit sees that the
// name no longer holds the file it wrote and merges the agent's write
// against what the view really had: both edits stay.
func TestSharedView_RenameUnderTheLeaseKeepsTheOtherAgentsEdit(t *testing.T) {
	t.Parallel()
	const given = "top 0\n\nThe agent's lines:\n"
	// The agent's writer read f.md before the refresh (given) and renames
	// its new version over the name while the unit holds the lease, right
	// before the unit writes the new tip's version in place.
	renamed := make(chan struct{})
	u, clone, view := sharedUnitWithView(t, map[string]string{"f.md": given}, renameOnce(t, "f.md", given+"agent-0\n", renamed))

	// The other agent's tool edit: committed, then copied into w's view.
	editTopAsO(t, u)
	waitDone(t, renamed)
	u.ViewChanged("w", "f.md") // the watcher's event for the rename

	tip := waitBothEdits(t, clone)
	poll(t, 20*time.Second, "w's view brought to the merge", func() bool {
		data, _ := os.ReadFile(filepath.Join(view, "f.md"))
		return string(data) == tip+"\n"
	})
}

// The agent's writer reads a view file, writes its new version to a
// temporary file, and renames it over the name (sed > tmp && mv, an
// editor); between its write and its rename the unit copies another
// agent's edit into the file (in place, nothing holding it open). The
// rename then puts a version made from the file before the edit on top.
// Merged against what the view was given last (the edited version), the
// agent's write would undo the other agent's edit (TestShared_
// ViewWritesByPolicy lost v1's "line 4" this way, 2 runs of 6 under
// load); its bytes were written before the unit's, so it is merged
// against the version before: both edits stay.
func TestSharedView_RenameOfAnOlderVersionKeepsTheOtherAgentsEdit(t *testing.T) {
	t.Parallel()
	const given = "top 0\n\nThe agent's lines:\n"
	u, clone, view := sharedUnitWithView(t, map[string]string{"f.md": given}, func(string) {})
	tmp := filepath.Join(filepath.Dir(view), ".edit.tmp")
	if err := os.WriteFile(tmp, []byte(given+"agent-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the file system's clock moves on (it ticks in milliseconds)
	editTopAsO(t, u)
	poll(t, 20*time.Second, "o's edit copied into w's view", func() bool {
		data, _ := os.ReadFile(filepath.Join(view, "f.md"))
		return string(data) == "top 1\n\nThe agent's lines:\n"
	})
	if err := os.Rename(tmp, filepath.Join(view, "f.md")); err != nil {
		t.Fatal(err)
	}
	u.ViewChanged("w", "f.md") // the watcher's event for the rename
	tip := waitBothEdits(t, clone)
	// A later write of the agent's, made from the merged version, is
	// merged against that version as before: its deletion of o's line
	// stands.
	poll(t, 20*time.Second, "w's view brought to the merge", func() bool {
		data, _ := os.ReadFile(filepath.Join(view, "f.md"))
		return string(data) == tip+"\n"
	})
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(view, "f.md"), []byte("top 2\n\nThe agent's lines:\nagent-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u.ViewChanged("w", "f.md")
	poll(t, 20*time.Second, "w's second write on the shared branch", func() bool {
		tip = testgit.Run(t, clone, "show", "HEAD:f.md")
		return strings.Contains(tip, "top 2")
	})
	if want := "top 2\n\nThe agent's lines:\nagent-0"; tip != want {
		t.Fatalf("shared f.md = %q, want %q", tip, want)
	}
}

// The same rename, landing while the unit holds the lease to remove a
// file another agent deleted: before the fix the unit removed whatever
// stood at the name, the agent's new file with it, and its line was lost
// (nowhere in the view, the clone or the history). Now the file is
// renamed aside and removed only if it is the one leased; the agent's
// file is put back and taken (its change stands over the deletion).
func TestSharedView_RenameUnderTheLeaseSurvivesARemoval(t *testing.T) {
	t.Parallel()
	const given = "a note\n"
	renamed := make(chan struct{})
	u, clone, view := sharedUnitWithView(t, map[string]string{"g.md": given, "keep.md": "kept\n"}, renameOnce(t, "g.md", given+"agent-0\n", renamed))

	res, err := u.SharedCall(memtool.Call{Input: memtool.Input{Command: "delete", Path: "/memories/g.md"}}, "o", shared.WriteAllow)
	if err != nil || res.IsError {
		t.Fatalf("o's deletion: %v %s", err, res.Content)
	}
	waitDone(t, renamed)
	u.ViewChanged("w", "g.md")

	poll(t, 20*time.Second, "w's line on the shared branch", func() bool {
		out, _ := testgit.Try(clone, "show", "HEAD:g.md")
		return out == given+"agent-0"
	})
	if data, err := os.ReadFile(filepath.Join(view, "g.md")); err != nil || string(data) != given+"agent-0\n" {
		t.Fatalf("w's view g.md = %q %v, want its write", data, err)
	}
	ents, _ := os.ReadDir(view)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".memfsd-tmp-") {
			t.Fatalf("left in the view: %s", e.Name())
		}
	}
}

// editTopAsO is the other agent o's tool edit of the shared f.md: its
// "top 0" becomes "top 1".
func editTopAsO(t *testing.T, u *shared.Unit) {
	t.Helper()
	oldStr, newStr := "top 0\n", "top 1\n"
	res, err := u.SharedCall(memtool.Call{Input: memtool.Input{Command: "str_replace", Path: "/memories/f.md", OldStr: &oldStr, NewStr: &newStr}}, "o", shared.WriteAllow)
	if err != nil || res.IsError {
		t.Fatalf("o's edit: %v %s", err, res.Content)
	}
}

// waitBothEdits waits for w's line on the shared branch and is the shared
// f.md then, which must hold o's edit too.
func waitBothEdits(t *testing.T, clone string) string {
	t.Helper()
	var tip string
	poll(t, 20*time.Second, "w's line on the shared branch", func() bool {
		tip = testgit.Run(t, clone, "show", "HEAD:f.md")
		return strings.Contains(tip, "agent-0")
	})
	if want := "top 1\n\nThe agent's lines:\nagent-0"; tip != want {
		t.Fatalf("shared f.md = %q, want %q: w's write undid o's edit", tip, want)
	}
	return tip
}

// poll waits until cond holds, failing the test after d.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
	}
}

// lockedBuffer is a log the unit's goroutines write while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
