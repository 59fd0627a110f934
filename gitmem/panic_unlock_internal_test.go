package gitmem

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A panic in a section under the repository's lock (go-git on objects the
// agent can write), recovered further up as the daemon does, leaves the
// repository usable: the next write does not wait forever for the lock.
func TestRepo_PanicUnderLock_NextWriteWorks(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	write := func(name string) error {
		if err := os.WriteFile(filepath.Join(r.Dir, name), []byte(name+"\n"), 0o644); err != nil {
			return err
		}
		_, err := r.CommitWrite([]string{name}, "write "+name)
		return err
	}
	if err := write("a.md"); err != nil {
		t.Fatal(err)
	}
	r.historyStep = func() { panic("walk: corrupt object") }
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("History did not panic")
			}
		}()
		_, _ = r.History("", 10)
	}()
	r.historyStep = nil
	done := make(chan error, 1)
	go func() { done <- write("b.md") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write after a recovered panic still waits for the repository's lock")
	}
	got, err := r.History("", 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("History after the panic: %d commits, %v", len(got), err)
	}
}
