package agent

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A panic in one of an agent's steps is that agent's error, with a next
// step, and the caller goes on (before: it ended the process).
func TestIsolate_PanicBecomesTheAgentsError(t *testing.T) {
	a, err := New(&Config{Home: t.TempDir()}, "pan")
	if err != nil {
		t.Fatal(err)
	}
	if a.safely("sync", func() { panic("boom") }) {
		t.Fatal("safely reported a panicking step as returned")
	}
	st := a.Status(false)
	if st.State != StateError || st.LastError == nil || !strings.Contains(st.LastError.Message, "panic") || !strings.Contains(st.LastError.Message, "boom") || st.LastError.NextStep == "" {
		t.Fatalf("status after a panic = %s, %+v; want error naming the panic with a next step", st.State, st.LastError)
	}
	// A panic in a bounded read (a status) is an error answer, not a crash.
	a.answers.BeforeRead = func() { panic("read boom") }
	st = a.Status(true)
	if st.State != StateError || st.LastError == nil || st.LastError.NextStep == "" {
		t.Fatalf("status whose read panicked = %s, %+v", st.State, st.LastError)
	}
}

// A status whose repository does not answer comes back within
// AnswerDeadline from the last known answer, in the error state with a
// next step; while the read stays stuck no second one is started; once it
// returns, status reads the repository again.
func TestIsolate_StuckStatusAnswersFromTheLastKnown(t *testing.T) {
	defer func(d, s time.Duration) { AnswerDeadline, StuckAfter = d, s }(AnswerDeadline, StuckAfter)
	AnswerDeadline, StuckAfter = 100*time.Millisecond, 0
	a, err := New(&Config{Home: t.TempDir()}, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	first := a.Status(false)
	release := make(chan struct{})
	var reads atomic.Int32
	a.answers.BeforeRead = func() {
		if reads.Add(1) == 1 {
			<-release
		}
	}
	start := time.Now()
	st := a.Status(true)
	if took := time.Since(start); took > AnswerDeadline+500*time.Millisecond {
		t.Fatalf("stuck status took %s", took)
	}
	if st.Agent != first.Agent || st.Dir != first.Dir || st.State != StateError || st.LastError == nil ||
		!strings.Contains(st.LastError.Message, "did not answer") || st.LastError.NextStep == "" {
		t.Fatalf("stuck status = %+v (error %+v); want the last known one, in error, with a next step", st, st.LastError)
	}
	start = time.Now()
	a.Status(false)
	if took := time.Since(start); took > AnswerDeadline/2 || reads.Load() != 1 {
		t.Fatalf("second status while stuck took %s and started %d reads; want at once, no new read", took, reads.Load())
	}
	if _, err := a.ContextAnswer(FormatMemfsd); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("context while stuck: %v", err)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for a.answers.Stuck() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stuck read's end was not noticed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := a.Status(false); st.LastError != nil && strings.Contains(st.LastError.Message, "did not answer") {
		t.Fatalf("status after the read returned is still stuck: %+v", st.LastError)
	}
}

// A read past AnswerDeadline but under StuckAfter is slow, not stuck:
// the last answer is given as it was (a big work tree's scan does not
// put the agent in the error state).
func TestIsolate_SlowStatusIsTheLastAnswerAsItWas(t *testing.T) {
	defer func(d, s time.Duration) { AnswerDeadline, StuckAfter = d, s }(AnswerDeadline, StuckAfter)
	AnswerDeadline, StuckAfter = 50*time.Millisecond, time.Hour
	a, err := New(&Config{Home: t.TempDir()}, "slow")
	if err != nil {
		t.Fatal(err)
	}
	first := a.Status(false)
	release := make(chan struct{})
	defer close(release)
	a.answers.BeforeRead = func() { <-release }
	st := a.Status(true)
	if st.State != first.State || (st.LastError == nil) != (first.LastError == nil) {
		t.Fatalf("slow status = %s %+v, want the last one (%s %+v)", st.State, st.LastError, first.State, first.LastError)
	}
}

// Close returns by its context's end even when one of the agent's loops
// never returns (a read stuck in its repository).
func TestIsolate_CloseDoesNotWaitOnAStuckLoop(t *testing.T) {
	a, err := New(&Config{Home: t.TempDir()}, "hang")
	if err != nil {
		t.Fatal(err)
	}
	a.wg.Add(1) // a loop that never ends
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := a.Close(ctx); err == nil {
		t.Fatal("Close of a stuck agent reported success")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %s with a 200ms deadline", took)
	}
}

// A panic under writeMu (go-git in RestoreMissing or CommitWrite, on
// objects the agent's shell can write), recovered as safely does, leaves
// writeMu free for the agent's next write.
func TestIsolate_PanicUnderWriteMuReleasesIt(t *testing.T) {
	t.Parallel()
	a, err := New(&Config{Home: t.TempDir()}, "panwrite")
	if err != nil {
		t.Fatal(err)
	}
	if a.safely("accept", func() { _ = a.underWrite(func() error { panic("corrupt object") }) }) {
		t.Fatal("safely reported a panicking step as returned")
	}
	if !a.writeMu.TryLock() {
		t.Fatal("writeMu still held after a recovered panic: every later write of the agent would wait forever")
	}
	a.writeMu.Unlock()
}
