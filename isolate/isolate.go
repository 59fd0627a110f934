// Package isolate keeps what one agent's repository does from reaching the
// others. One daemon serves many agents, and each agent's shell can write
// its own .git: a file that blocks, a bug that panics. A step run under
// Safely turns a panic into a value for the agent's error; a read run
// under Run is bounded by a deadline, and while one read of an agent is
// stuck past it no other is started (one goroutine per stuck agent, not
// one per request). What to answer instead (the last answer, or ErrStuck
// with a next step) is the caller's: package agent keeps the deadlines and
// the last answers. It sits below package agent and imports nothing of
// memfsd.
package isolate

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrStuck is an agent's repository not answering within the deadline.
var ErrStuck = errors.New("the agent's repository did not answer in time")

// StuckError is a read that did not return within Deadline.
type StuckError struct {
	What     string
	Deadline time.Duration
	// NoLast: the answer has no earlier one to fall back on (history, a
	// file at a revision): the caller asks again later.
	NoLast bool
}

func (e StuckError) Error() string {
	if e.NoLast {
		return fmt.Sprintf("%s: %v (%s); ask again once it does", e.What, ErrStuck, e.Deadline)
	}
	return fmt.Sprintf("%s: %v (%s); the answer is the last one known", e.What, ErrStuck, e.Deadline)
}

// Unwrap is ErrStuck.
func (e StuckError) Unwrap() error { return ErrStuck }

// NextStep tells the operator where a read that does not return comes from.
func (e StuckError) NextStep() string {
	return "a read of the memory folder's .git does not return (a FIFO or a hung disk there?): look for files in .git that git does not write (`find .git -type p`), remove them, and check the disk; the other agents are not affected"
}

// PanicError is a panic recovered in one of the agent's steps.
type PanicError struct {
	What  string
	Value any
}

func (e PanicError) Error() string {
	return fmt.Sprintf("%s: internal error (panic): %v", e.What, e.Value)
}

// NextStep tells the operator what a recovered panic means for the agent.
func (e PanicError) NextStep() string {
	return "memfsd hit an internal error on this agent only (the others carry on); the step is tried again at the next sync: if it persists, report it with the daemon's log (it holds the stack) and restart memfsd"
}

// Safely runs step, handing a panic in it to panicked (called from the
// deferred recover, so it can log the stack) instead of ending the
// process. It reports whether step returned normally.
func Safely(what string, step func(), panicked func(what string, v any)) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			panicked(what, v)
		}
	}()
	step()
	return true
}

// Gate is one agent's bounded reads: how many are still running past
// their deadline, and since when.
type Gate struct {
	stuck atomic.Int32
	// stuckSince is when the oldest read still running began (unix ns).
	stuckSince atomic.Int64
	// BeforeRead, when set (tests only), runs at the start of each
	// bounded read: a read that hangs.
	BeforeRead func()
}

// Stuck counts the reads still running past their deadline.
func (g *Gate) Stuck() int32 { return g.stuck.Load() }

// StuckSince is when the oldest read still running past its deadline
// began.
func (g *Gate) StuckSince() time.Time { return time.Unix(0, g.stuckSince.Load()) }

// Run runs read in its own goroutine, under safely, and waits at most
// deadline for it: past it the answer is a StuckError and the read's end
// is waited for by a goroutine of its own. While an earlier read through
// g is still stuck, it does not start another.
func Run[T any](g *Gate, deadline time.Duration, what string, safely func(what string, step func()) bool, read func() (T, error)) (T, error) {
	var zero T
	if g.stuck.Load() > 0 {
		return zero, StuckError{What: what, Deadline: deadline}
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if !safely(what, func() {
			if g.BeforeRead != nil {
				g.BeforeRead()
			}
			r.v, r.err = read()
		}) {
			r.err = PanicError{What: what, Value: "see the log"}
		}
		done <- r
	}()
	began := time.Now()
	t := time.NewTimer(deadline)
	defer t.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
	}
	if g.stuck.Add(1) == 1 {
		g.stuckSince.Store(began.UnixNano())
	}
	go func() { // the stuck read's owner: ends when it does
		<-done
		g.stuck.Add(-1)
	}()
	return zero, StuckError{What: what, Deadline: deadline}
}

// RunNoLast is Run for an answer that has no earlier one to fall back
// on: past the deadline it is an ErrStuck error saying to ask again.
func RunNoLast[T any](g *Gate, deadline time.Duration, what string, safely func(what string, step func()) bool, read func() (T, error)) (T, error) {
	v, err := Run(g, deadline, what, safely, read)
	var se StuckError
	if errors.As(err, &se) {
		se.NoLast = true
		err = se
	}
	return v, err
}
