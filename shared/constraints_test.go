package shared_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/testgit"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/shared"
)

// lettaDefaults is letta-code's default limits as a .memfs.config.json.
const lettaDefaults = "{\n  \"version\": 1,\n  \"maxDepth\": 2,\n  \"maxFileCharacters\": 20000,\n  \"maxCoreMemoryCharacters\": 65536\n}\n"

// v2File is a memfs v2 file of n characters named for rel's base.
func v2File(rel string, n int) string {
	head := "---\nname: " + strings.TrimSuffix(filepath.Base(rel), ".md") + "\ndescription: d\n---\n"
	return head + strings.Repeat("x", n-len(head))
}

// A shared repository letta-code agents share, with letta-code's limits
// in .memfs.config.json (its shared-memory policy takes limits only from
// that file, no defaults), gets letta-code's tree rules on every route an
// attached memfsd agent writes by: the tool (write: allow and propose) refuses a
// file over 20,000 characters and a folder 3 deep; a view write (allow
// and propose) is held, not taken, with a constraints_held reminder, and
// taken once it fits. Before, the view's write was committed and pushed
// (and proposed), and letta-code refused every commit on the repository
// after it.
func TestSharedConstraints_EveryRoute(t *testing.T) {
	t.Parallel()
	u, clone, view := sharedUnitWithView(t, map[string]string{
		"MEMORY.md": "# Memory\n", "a.md": v2File("a.md", 100), ".memfs.config.json": lettaDefaults,
	}, func(string) {})
	if err := u.AttachView("p", shared.WritePropose); err != nil {
		t.Fatal(err)
	}
	pview := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(view))), "p", "shared", "team")
	poll(t, 8*time.Second, "p's view holds a.md", func() bool {
		_, err := os.Stat(filepath.Join(pview, "a.md"))
		return err == nil
	})

	// The tool, allow and propose: refused in letta-code's words.
	for _, write := range []shared.WritePolicy{shared.WriteAllow, shared.WritePropose} {
		for rel, text := range map[string]string{"big.md": v2File("big.md", 20001), "d1/d2/d3/deep.md": v2File("deep.md", 50)} {
			in := memtool.Call{Input: memtool.Input{Command: "create", Path: "/memories/" + rel, FileText: &text}}
			res, err := u.SharedCall(in, "o", write)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(res.Content, "letta-code") {
				t.Fatalf("%s create %s answered %q, want a refusal by letta-code's limits", write, rel, res.Content)
			}
		}
	}
	if props := u.Proposals(); len(props) != 0 {
		t.Fatalf("proposals made: %+v", props)
	}

	// A view write (propose): held, not proposed.
	if err := os.MkdirAll(filepath.Join(pview, "d1", "d2", "d3"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pview, "d1", "d2", "d3", "deep.md"), []byte(v2File("deep.md", 50)), 0o600); err != nil {
		t.Fatal(err)
	}
	u.ViewChanged("p", "d1/d2/d3/deep.md")
	waitReminder(t, u, "p", "deep.md")
	if props := u.Proposals(); len(props) != 0 {
		t.Fatalf("proposals made: %+v", props)
	}

	// A view write (allow): held, not taken; the reminder names it.
	big := v2File("big.md", 20001)
	if err := os.WriteFile(filepath.Join(view, "big.md"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	u.ViewChanged("w", "big.md")
	waitReminder(t, u, "w", "big.md")
	if out, err := testgit.Try(clone, "ls-tree", "-r", "--name-only", "HEAD"); err != nil || strings.Contains(out, "big.md") {
		t.Fatalf("big.md committed to the shared branch: %q %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(clone, "big.md")); err == nil {
		t.Fatal("big.md left in the shared clone")
	}
	if data, _ := os.ReadFile(filepath.Join(view, "big.md")); string(data) != big {
		t.Fatal("w's view lost its write")
	}
	// Made to fit: taken.
	fits := v2File("big.md", 19000)
	if err := os.WriteFile(filepath.Join(view, "big.md"), []byte(fits), 0o600); err != nil {
		t.Fatal(err)
	}
	u.ViewChanged("w", "big.md")
	poll(t, 8*time.Second, "the shortened big.md on the shared branch", func() bool {
		out, _ := testgit.Try(clone, "show", "HEAD:big.md")
		return len(out) == len(strings.TrimRight(fits, "\n"))
	})
}

// waitReminder waits for view id's constraints_held reminder naming rel.
func waitReminder(t *testing.T, u *shared.Unit, id, rel string) {
	t.Helper()
	var got []reminders.Reminder
	poll(t, 8*time.Second, id+"'s constraints_held reminder for "+rel, func() bool {
		got = append(got, u.ViewReminders(id)...)
		for _, r := range got {
			if r.Kind == reminders.KindConstraintsHeld && strings.Contains(r.Text, rel) && strings.Contains(r.Text, "letta-code") {
				return true
			}
		}
		return false
	})
}
