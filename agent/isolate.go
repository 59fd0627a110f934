package agent

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memfsd/memfsd/retry"
)

// One daemon serves many agents, and each agent's shell can write its own
// .git: whatever that repository does (a file that blocks, a bug that
// panics), it must end at that agent. The loops run each step under
// safely (a panic becomes the agent's error, the loop goes on); every
// answer about the agent (status, context) is bounded by AnswerDeadline
// and falls back to the last answer given, marked as stale; history and a
// file at a revision, bounded the same way, have none to fall back on and
// answer ErrStuck with a next step.

// AnswerDeadline bounds an answer about one agent (status, context):
// past it the last known answer is given, with the agent in the error
// state saying its repository did not answer.
var AnswerDeadline = 1500 * time.Millisecond

// StuckAfter is how long a read of the agent's repository may run before
// the agent's answers say it is stuck (state error). Before that, a read
// past AnswerDeadline is taken as slow (a big work tree's scan) and the
// last answer is given as it was.
var StuckAfter = 10 * time.Second

// answerCache is the last answers given about one agent, and how many
// reads of its repository are still running past their deadline.
type answerCache struct {
	mu      sync.Mutex
	status  *Status
	context map[string]Context
	stuck   atomic.Int32
	// stuckSince is when the oldest read still running began (unix ns).
	stuckSince atomic.Int64
	// beforeRead, when set (tests only), runs at the start of each
	// bounded read: a read that hangs.
	beforeRead func()
}

// ErrStuck is an agent's repository not answering within AnswerDeadline.
var ErrStuck = errors.New("the agent's repository did not answer in time")

type stuckError struct {
	what string
	// noLast: the answer has no earlier one to fall back on (history, a
	// file at a revision): the caller asks again later.
	noLast bool
}

func (e stuckError) Error() string {
	if e.noLast {
		return fmt.Sprintf("%s: %v (%s); ask again once it does", e.what, ErrStuck, AnswerDeadline)
	}
	return fmt.Sprintf("%s: %v (%s); the answer is the last one known", e.what, ErrStuck, AnswerDeadline)
}
func (e stuckError) Unwrap() error { return ErrStuck }
func (e stuckError) NextStep() string {
	return "a read of the memory folder's .git does not return (a FIFO or a hung disk there?): look for files in .git that git does not write (`find .git -type p`), remove them, and check the disk; the other agents are not affected"
}

// panicError is a panic recovered in one of the agent's steps.
type panicError struct {
	what  string
	value any
}

func (e panicError) Error() string {
	return fmt.Sprintf("%s: internal error (panic): %v", e.what, e.value)
}
func (e panicError) NextStep() string {
	return "memfsd hit an internal error on this agent only (the others carry on); the step is tried again at the next sync: if it persists, report it with the daemon's log (it holds the stack) and restart memfsd"
}

// safely runs step, turning a panic into the agent's error (and a log
// line with the stack) instead of the end of the process. It reports
// whether step returned normally.
func (a *Agent) safely(what string, step func()) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			a.Panicked(what, v)
		}
	}()
	step()
	return true
}

// Panicked records a panic recovered in one of the agent's steps (or a
// request about it): logged with the stack, the agent's error with a next
// step. Call it from the deferred recover.
func (a *Agent) Panicked(what string, v any) {
	a.log.Error("internal error (panic) in one agent's step; the agent is in the error state, the daemon carries on", "step", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	a.recordErr(panicError{what: what, value: v}, 1)
}

// bounded runs read in its own goroutine and waits at most AnswerDeadline
// for it. While an earlier read of this agent is still stuck, it does
// not start another (one goroutine per stuck agent, not one per request).
func bounded[T any](a *Agent, what string, read func() (T, error)) (T, error) {
	var zero T
	if a.answers.stuck.Load() > 0 {
		return zero, stuckError{what: what}
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if !a.safely(what, func() {
			if a.answers.beforeRead != nil {
				a.answers.beforeRead()
			}
			r.v, r.err = read()
		}) {
			r.err = panicError{what: what, value: "see the log"}
		}
		done <- r
	}()
	began := time.Now()
	t := time.NewTimer(AnswerDeadline)
	defer t.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
	}
	if a.answers.stuck.Add(1) == 1 {
		a.answers.stuckSince.Store(began.UnixNano())
	}
	go func() { // the stuck read's owner: ends when it does
		<-done
		a.answers.stuck.Add(-1)
	}()
	return zero, stuckError{what: what}
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
	if last != nil && errors.Is(err, ErrStuck) && time.Since(time.Unix(0, a.answers.stuckSince.Load())) < StuckAfter {
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
	v, err := bounded(a, what, read)
	var se stuckError
	if errors.As(err, &se) {
		se.noLast = true
		err = se
	}
	return v, err
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
	var se stuckError
	if last, ok := a.answers.context[format]; ok && errors.As(err, &se) {
		a.log.Warn("context answered from the last one rendered", "err", err)
		return last, nil
	}
	return c, err
}
