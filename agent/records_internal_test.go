package agent

import (
	"sync/atomic"

	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memfsd/memfsd/records"
)

func TestRecords_RejectedKeepsNewestAndTells(t *testing.T) {
	t.Parallel()
	cfg := &Config{Home: t.TempDir()}
	a, err := New(cfg, "rec")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(a.Dir(), 0o700)
	for i := 0; i < DefaultRejectedKeep+5; i++ {
		if err := a.keepRejected(fmt.Sprintf("system/b%03d.md", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	names := a.rejectedNames()
	if len(names) != DefaultRejectedKeep {
		t.Fatalf("kept %d rejected files, want %d", len(names), DefaultRejectedKeep)
	}
	if names[0].Path != "system/b005.md" || names[len(names)-1].Path != fmt.Sprintf("system/b%03d.md", DefaultRejectedKeep+4) {
		t.Fatalf("kept %s .. %s, want the newest", names[0].Path, names[len(names)-1].Path)
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
	t.Parallel()
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
	if _, err := os.Stat(filepath.Join(a.Dir(), ".git", "memfsd", records.HeldDeletesFile)); !os.IsNotExist(err) {
		t.Fatalf("empty record not removed: %v", err)
	}
}

// TestRecords_RejectedNeverThroughALink: the agent's shell swaps
// .git/memfsd with a link to an outside folder, again and again, where
// files are named like rejections: keeping (and pruning, past the limit)
// rejections neither writes nor removes anything outside.
func TestRecords_RejectedNeverThroughALink(t *testing.T) {
	t.Parallel()
	cfg := &Config{Home: t.TempDir()}
	a, err := New(cfg, "rec")
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(outside, "rejected"), 0o700)
	for i := 0; i < 5; i++ {
		os.WriteFile(filepath.Join(outside, "rejected", fmt.Sprintf("%d-victim", i)), []byte("outside"), 0o600)
	}
	gitDir := filepath.Join(a.Dir(), ".git")
	os.MkdirAll(filepath.Join(gitDir, "memfsd", "rejected"), 0o700)
	os.Symlink(outside, filepath.Join(gitDir, "swap"))
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			// A link removed by memfsd is put back, as a looping shell would.
			os.Symlink(outside, filepath.Join(gitDir, "swap"))
			os.Mkdir(filepath.Join(gitDir, "memfsd"), 0o700)
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(gitDir, "memfsd"), unix.AT_FDCWD, filepath.Join(gitDir, "swap"), unix.RENAME_EXCHANGE)
		}
	}()
	for i := 0; i < 3*DefaultRejectedKeep; i++ {
		a.keepRejected("system/persona.md", []byte("x")) // may fail mid-swap; never outside
	}
	stop.Store(true)
	<-done
	entries, _ := os.ReadDir(filepath.Join(outside, "rejected"))
	if len(entries) != 5 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("outside folder now holds %v, want its 5 victims", names)
	}
}
