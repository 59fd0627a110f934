package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
)

// History, a file at a revision and HEAD's file list (the MCP resources)
// come back within AnswerDeadline, as
// ErrStuck with a next step, while the agent's repository holds its lock
// (a read stuck on its .git); once the lock goes they answer again.
// Not parallel: it sets AnswerDeadline.
func TestHistory_StuckRepositoryAnswersWithinDeadline(t *testing.T) {
	defer func(d time.Duration) { AnswerDeadline = d }(AnswerDeadline)
	AnswerDeadline = 200 * time.Millisecond
	a, err := New(&Config{Home: t.TempDir()}, "hist")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitmem.Init(a.Dir(), gitmem.Remote{URL: "http://127.0.0.1:1/none.git"}, gitmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	if err := os.WriteFile(filepath.Join(a.Dir(), "note.md"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CommitWrite([]string{"note.md"}, "note"); err != nil {
		t.Fatal(err)
	}
	a.repo = repo

	// Hold the repository's lock: FindCommit's match runs under it.
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = repo.FindCommit(1, func(string) bool {
			close(held)
			<-release
			return true
		})
	}()
	<-held
	start := time.Now()
	_, herr := a.History("", 5)
	_, ferr := a.FileAt("note.md", "")
	_, _, lerr := a.Files()
	took := time.Since(start)
	close(release)
	<-done
	if took > 2*AnswerDeadline+time.Second {
		t.Fatalf("history and file-at under a held lock took %s", took)
	}
	for what, err := range map[string]error{"history": herr, "file at": ferr, "files": lerr} {
		if !errors.Is(err, ErrStuck) || retry.NextStep(err) == "" {
			t.Fatalf("%s under a held lock: %v (next step %q); want ErrStuck with a next step", what, err, retry.NextStep(err))
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.answers.Stuck() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stuck read's end was not noticed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if h, err := a.History("", 5); err != nil || len(h.Commits) == 0 {
		t.Fatalf("history after the lock went: %+v, %v", h, err)
	}
	if f, err := a.FileAt("note.md", ""); err != nil || f.Content != "hi\n" {
		t.Fatalf("file at HEAD after the lock went: %+v, %v", f, err)
	}
	if _, fs, err := a.Files(); err != nil || len(fs) == 0 {
		t.Fatalf("files after the lock went: %v, %v", fs, err)
	}
}
