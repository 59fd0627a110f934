package status

import (
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/reminders"
)

// A last error whose text holds a newline (an auth error's server
// answer, a file name) is one line in `memfsd status` (issue 28).
func TestErrorLine_OneLine(t *testing.T) {
	t.Parallel()
	e := &LastError{Class: "auth", Message: "auth: push alice: 401 Unauthorized\nbad token\r\x1b[31m\xff", NextStep: "fix the token file\nthen wait"}
	got := ErrorLine(e)
	if strings.ContainsAny(got, "\n\r\x1b") {
		t.Fatalf("ErrorLine = %q: a control character breaks the line", got)
	}
	want := `auth: push alice: 401 Unauthorized\nbad token\r\u001b[31m\xff (next: fix the token file\nthen wait)`
	if got != want {
		t.Fatalf("ErrorLine = %q, want %q", got, want)
	}
	if ErrorLine(nil) != "-" {
		t.Fatal("no error is not -")
	}
	st := Status{Agent: "a", HeldDeletes: []string{"x\n.md", "b", "c", "d"}}
	w := Waiting(st)
	if len(w) != 1 || w[0] != `mass_delete_held: x\n.md, b, c and 1 more (memfsd sync --agent a --accept-deletes, or --restore-deletes)` {
		t.Fatalf("waiting = %q", w)
	}
}

// A row in state error has its reason: write problems by cause (the
// cause as --json names it, each file as the reminder describes it, the
// next step), an agent not cloned yet (issue 39: both were "error - -").
func TestWaiting_EveryErrorHasItsLine(t *testing.T) {
	t.Parallel()
	st := Status{Agent: "a", Ready: true, WriteProblems: []reminders.WriteProblem{
		{Path: "big.md", Cause: reminders.CauseTooLarge, Size: 5000, Limit: 4096},
		{Path: "x\ty.md", Cause: reminders.CauseBadName},
		{Path: "fill.bin", Cause: reminders.CauseDiskFull},
		{Path: "odd.md", Cause: reminders.CauseWriteFailed, Detail: "input/output error\nmore"},
	}}
	st.State = State(st, false)
	got := strings.Join(Waiting(st), "\n")
	for _, want := range []string{
		"too_large: /memories/big.md (too large: 5000 bytes, the cap is 4096) (not committed: split the file or delete it, or raise --max-file-bytes; committed once it fits)",
		`bad_name: "/memories/x\ty.md" (bad name: a control character or bytes that are not UTF-8) (not committed: rename it`,
		"disk_full: /memories/fill.bin (disk full) (not committed: free space on the disk holding the memory",
		"write_failed: /memories/odd.md (input/output error) (not committed: see the cause",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("waiting lacks %q:\n%s", want, got)
		}
	}
	fresh := Status{Agent: "b"}
	fresh.State = State(fresh, true)
	if w := Waiting(fresh); fresh.State != StateError || len(w) != 1 || !strings.HasPrefix(w[0], "not_ready: ") || !strings.Contains(w[0], "memfsd turn --agent b") {
		t.Errorf("an agent not cloned yet: %s %q", fresh.State, w)
	}
}

// The agent's reminder of a failed sync names the class once (issue 39:
// "delayed (retryable after 3 attempts: sync a3: retryable: push: ...)").
func TestBuildReminders_ClassOnce(t *testing.T) {
	t.Parallel()
	st := Status{Agent: "a3", Ahead: 1, LastError: &LastError{Class: "retryable", Attempts: 3,
		Message: "sync a3: retryable: push: the remote answered HTTP 503 Service Unavailable to a push on http://h/v1/git/a3/state.git"}}
	rs := BuildReminders(st, time.Now())
	if len(rs) == 0 {
		t.Fatal("no reminder")
	}
	text := rs[0].Text
	if !strings.Contains(text, "(retryable after 3 attempts: sync a3: push: the remote answered HTTP 503") || strings.Count(text, "retryable") != 1 {
		t.Errorf("reminder = %q", text)
	}
}

// The operator's block set not on the remote yet, and the background
// retry of a failed push, each have their line (issue 38: they were in
// --json only).
func TestWaiting_OwedChangesHaveTheirLines(t *testing.T) {
	t.Parallel()
	next := time.Date(2026, 12, 8, 3, 0, 0, 0, time.UTC)
	st := Status{Agent: "a", Ready: true,
		BlockSetsPending: []BlockSetPending{{Path: "system/persona.md", Reason: "the remote is down"}},
		PushRetry:        &PushRetry{NextAt: next, Tries: 3},
	}
	got := strings.Join(Waiting(st), "\n")
	for _, want := range []string{
		"block_set_pending: system/persona.md [the remote is down] (memfsd pushes it by itself",
		"push_retry: commits not on the remote yet; try 3 failed, the next at 2026-12-08T03:00:00Z",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("waiting lacks %q:\n%s", want, got)
		}
	}
}
