package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRecords_RejectedKeepsNewestAndTells(t *testing.T) {
	cfg := &Config{Home: t.TempDir()}
	a, err := New(cfg, "rec")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < DefaultRejectedKeep+5; i++ {
		if err := a.keepRejected(fmt.Sprintf("system/b%03d.md", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	names := rejectedNames(a.recordPath(rejectedDir))
	if len(names) != DefaultRejectedKeep {
		t.Fatalf("kept %d rejected files, want %d", len(names), DefaultRejectedKeep)
	}
	if names[0].path != "system/b005.md" || names[len(names)-1].path != fmt.Sprintf("system/b%03d.md", DefaultRejectedKeep+4) {
		t.Fatalf("kept %s .. %s, want the newest", names[0].path, names[len(names)-1].path)
	}
	if n := len(a.untoldRejections()); n != DefaultRejectedKeep {
		t.Fatalf("untold = %d", n)
	}
	// Told = the agent fetched its reminders, then a turn passed.
	a.settleRejections()
	if n := len(a.untoldRejections()); n != DefaultRejectedKeep {
		t.Fatalf("a turn alone told %d", DefaultRejectedKeep-n)
	}
	a.markRejectionsSeen()
	if n := len(a.untoldRejections()); n != DefaultRejectedKeep {
		t.Fatal("fetching reminders alone cleared them")
	}
	a.settleRejections()
	if n := len(a.untoldRejections()); n != 0 {
		t.Fatalf("%d still untold after reminders and a turn", n)
	}
	time.Sleep(time.Millisecond)
	a.keepRejected("system/persona.md", []byte("new"))
	if got := a.untoldRejections(); len(got) != 1 || got[0] != "system/persona.md" {
		t.Fatalf("a new rejection after telling: %v", got)
	}
}

func TestRecords_HeldDeletes(t *testing.T) {
	cfg := &Config{Home: t.TempDir()}
	a, _ := New(cfg, "held")
	if err := a.updateHeld([]string{"b.md", "a.md"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := a.readHeld(); len(got) != 2 || got[0] != "a.md" {
		t.Fatalf("held = %v", got)
	}
	a.updateHeld(nil, []string{"a.md"})
	if got := a.readHeld(); len(got) != 1 || got[0] != "b.md" {
		t.Fatalf("after committing a.md: %v", got)
	}
	a.updateHeld(nil, []string{"b.md"})
	if _, err := os.Stat(filepath.Join(a.Dir(), ".git", "memfsd", heldDeletesFile)); !os.IsNotExist(err) {
		t.Fatalf("empty record not removed: %v", err)
	}
}
