package agent

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/memfsd/memfsd/isolate"
	"github.com/memfsd/memfsd/retry"
)

// One daemon serves many agents, and each agent's shell can write its own
// .git: whatever that repository does (a file that blocks, a bug that
// panics), it must end at that agent. The loops run each step under
// safely (a panic becomes the agent's error, the loop goes on); every
// answer about the agent (status, context) is bounded by AnswerDeadline
// and falls back to the last answer given, marked as stale; history and a
// file at a revision, bounded the same way, have none to fall back on and
// answer ErrStuck with a next step. Package isolate runs the steps and
// bounds the reads; what is answered instead is decided here.

// AnswerDeadline bounds an answer about one agent (status, context):
// past it the last known answer is given, with the agent in the error
// state saying its repository did not answer.
var AnswerDeadline = 1500 * time.Millisecond

// StuckAfter is how long a read of the agent's repository may run before
// the agent's answers say it is stuck (state error). Before that, a read
// past AnswerDeadline is taken as slow (a big work tree's scan) and the
// last answer is given as it was.
var StuckAfter = 10 * time.Second

// answerCache is the last answers given about one agent, and its reads
// still running past their deadline (isolate.Gate).
type answerCache struct {
	isolate.Gate
	mu      sync.Mutex
	status  *Status
	context map[string]Context
}

// ErrStuck is an agent's repository not answering within AnswerDeadline.
var ErrStuck = isolate.ErrStuck

// safely runs step, turning a panic into the agent's error (and a log
// line with the stack) instead of the end of the process. It reports
// whether step returned normally.
func (a *Agent) safely(what string, step func()) (ok bool) {
	return isolate.Safely(what, step, a.Panicked)
}

// Panicked records a panic recovered in one of the agent's steps (or a
// request about it): logged with the stack, the agent's error with a next
// step. Call it from the deferred recover.
func (a *Agent) Panicked(what string, v any) {
	a.log.Error("internal error (panic) in one agent's step; the agent is in the error state, the daemon carries on", "step", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	a.recordErr(isolate.PanicError{What: what, Value: v}, 1)
}

// bounded runs read in its own goroutine and waits at most AnswerDeadline
// for it (isolate.Run). While an earlier read of this agent is still
// stuck, it does not start another.
func bounded[T any](a *Agent, what string, read func() (T, error)) (T, error) {
	return isolate.Run(&a.answers.Gate, AnswerDeadline, what, a.safely, read)
}

// Status is the agent's state (readStatus), answered within
// AnswerDeadline: when its repository does not answer in time it is the
// last status given, as it was while the read is merely slow (under
// StuckAfter), then in the error state with why and a next step (so is
// a read that panics, or a first one that does not answer).
func (a *Agent) Status(scan bool) Status {
	st, err := bounded(a, "status", func() (Status, error) { return a.readStatus(scan), nil })
	if err == nil {
		a.answers.mu.Lock()
		a.answers.status = &st
		a.answers.mu.Unlock()
		return st
	}
	a.answers.mu.Lock()
	last := a.answers.status
	if last != nil && errors.Is(err, ErrStuck) && time.Since(a.answers.StuckSince()) < StuckAfter {
		st = *last // slow, not (yet) stuck: the last answer as it was
		a.answers.mu.Unlock()
		return st
	}
	if last != nil {
		st = *last
	} else {
		st = Status{Agent: a.ID, Dir: a.Dir(), Remote: RedactURL(a.remote().URL), Dirty: []string{}, Conflicts: []string{}, Backups: []string{}}
	}
	a.answers.mu.Unlock()
	st.State = StateError
	st.LastError = &LastError{Class: string(retry.ClassOf(err)), Message: err.Error(), At: time.Now().UTC(), NextStep: retry.NextStep(err)}
	return st
}

// boundedRead is bounded for an answer that has no earlier one to fall
// back on: past AnswerDeadline it is an ErrStuck error with a next step.
func boundedRead[T any](a *Agent, what string, read func() (T, error)) (T, error) {
	return isolate.RunNoLast(&a.answers.Gate, AnswerDeadline, what, a.safely, read)
}

// ContextAnswer is ContextAs within AnswerDeadline: when the agent's
// repository does not answer in time it is the last context rendered in
// that format (an error when there is none yet).
func (a *Agent) ContextAnswer(format string) (Context, error) {
	c, err := bounded(a, "context", func() (Context, error) { return a.ContextAs(format) })
	a.answers.mu.Lock()
	defer a.answers.mu.Unlock()
	if err == nil {
		if a.answers.context == nil {
			a.answers.context = map[string]Context{}
		}
		a.answers.context[format] = c
		return c, nil
	}
	var se isolate.StuckError
	if last, ok := a.answers.context[format]; ok && errors.As(err, &se) {
		a.log.Warn("context answered from the last one rendered", "err", err)
		return last, nil
	}
	return c, err
}
