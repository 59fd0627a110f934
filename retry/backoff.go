package retry

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Backoff defaults: the first retry after about 250 ms, doubling with ±50%
// jitter, at most 30 s apart, giving up after 2 minutes per sync.
const (
	DefaultInitial    = 250 * time.Millisecond
	DefaultMultiplier = 2.0
	DefaultMax        = 30 * time.Second
	DefaultBudget     = 2 * time.Minute
	// DefaultAttemptTimeout bounds one attempt, every request in it.
	DefaultAttemptTimeout = 2 * time.Minute
)

// Policy is how retryable failures are retried.
type Policy struct {
	Initial    time.Duration
	Multiplier float64
	Max        time.Duration
	Budget     time.Duration // total time for one sync; 0 = DefaultBudget
	// AttemptTimeout bounds one attempt (a context of its own); 0 =
	// DefaultAttemptTimeout.
	AttemptTimeout time.Duration
}

// DefaultPolicy is the policy with the Default* values.
func DefaultPolicy() Policy {
	return Policy{Initial: DefaultInitial, Multiplier: DefaultMultiplier, Max: DefaultMax, Budget: DefaultBudget, AttemptTimeout: DefaultAttemptTimeout}
}

// Outcome is what Do saw: how many attempts and the last class.
type Outcome struct {
	Attempts  int
	LastClass Class
}

// Do runs fn until it succeeds, fails with a class other than retryable
// (auth, not_found, permanent, ...: one attempt, no storm), the budget runs
// out, or ctx ends. Each attempt gets a context of its own, bounded by
// AttemptTimeout. Waits grow exponentially with jitter; a server's
// Retry-After is honoured when longer, but never past the budget: a wait
// that would end beyond it ends the retries at once. Errors come back
// classified (*Error).
func Do(ctx context.Context, p Policy, op string, fn func(ctx context.Context) error) (Outcome, error) {
	if p.Initial <= 0 {
		p = DefaultPolicy()
	}
	if p.Budget <= 0 {
		p.Budget = DefaultBudget
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = DefaultAttemptTimeout
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.Initial
	b.Multiplier = p.Multiplier
	b.MaxInterval = p.Max
	b.MaxElapsedTime = p.Budget
	b.RandomizationFactor = 0.5
	b.Reset()
	end := time.Now().Add(p.Budget)
	var out Outcome
	for {
		out.Attempts++
		actx, cancel := context.WithTimeout(ctx, p.AttemptTimeout)
		err := Wrap(op, fn(actx))
		cancel()
		out.LastClass = ClassOf(err)
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil {
			return out, err // the caller gave up: no retry
		}
		var e *Error
		if !errors.As(err, &e) || e.Class != ClassRetryable {
			return out, err
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop {
			return out, err
		}
		if e.RetryAfter > wait {
			wait = e.RetryAfter
		}
		if time.Now().Add(wait).After(end) {
			return out, err // the server asks for longer than the budget has left
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
	}
}

// Rounds is the backoff between background rounds of a failed push (each
// round a sync of its own, retried under Do): from Initial, growing by
// Multiplier with ±50% jitter up to Max, never giving up (the status
// shows the failure until a push lands or a person acts).
func (p Policy) Rounds() *backoff.ExponentialBackOff {
	if p.Initial <= 0 {
		p = DefaultPolicy()
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.Initial
	b.Multiplier = max(p.Multiplier, 1)
	b.MaxInterval = max(p.Max, p.Initial)
	b.MaxElapsedTime = 0
	b.RandomizationFactor = 0.5
	b.Reset()
	return b
}
