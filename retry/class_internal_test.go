package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/memfsd/memfsd/gitmem"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want Class
	}{
		{fmt.Errorf("push: %w", gitmem.ErrNonFastForward), ClassNonFastForward},
		{fmt.Errorf("pull: %w", gitmem.ErrUnrelatedHistory), ClassUnrelatedHistory},
		{fmt.Errorf("fetch: %w", transport.ErrAuthenticationRequired), ClassAuth},
		{fmt.Errorf("fetch: %w", transport.ErrAuthorizationFailed), ClassAuth},
		{fmt.Errorf("fetch: %w", transport.ErrRepositoryNotFound), ClassNotFound},
		{&url.Error{Op: "Get", URL: "http://x", Err: syscall.ECONNREFUSED}, ClassRetryable},
		{fmt.Errorf("push: %w", net.ErrClosed), ClassRetryable},
		{errors.New("command error on refs/heads/main: non-fast-forward"), ClassNonFastForward},
		{errors.New("command error on refs/heads/main: failed to update ref"), ClassNonFastForward},
		{context.DeadlineExceeded, ClassRetryable},
		// go-git's POSTs (the pack exchange) wrap transport errors in an
		// UnexpectedError that has no Unwrap.
		{fmt.Errorf("fetch: %w", plumbing.NewUnexpectedError(&url.Error{Op: "Post", URL: "http://x", Err: headerTimeout{}})), ClassRetryable},
		{fmt.Errorf("push: %w", plumbing.NewUnexpectedError(&url.Error{Op: "Post", URL: "http://x", Err: context.DeadlineExceeded})), ClassRetryable},
		{fmt.Errorf("push: %w", plumbing.NewUnexpectedError(&url.Error{Op: "Post", URL: "http://x", Err: syscall.ECONNREFUSED})), ClassRetryable},
		{fmt.Errorf("push: %w", plumbing.NewUnexpectedError(errors.New("something odd"))), ClassPermanent},
		{errors.New("something odd"), ClassPermanent},
		// A pack a concurrent git gc removed under the reader is transient.
		{fmt.Errorf("fetch: %w", dotgit.ErrPackfileNotFound), ClassRetryable},
		{errors.New("fetch: packfile not found"), ClassRetryable},
		{nil, ClassNone},
	}
	for _, c := range cases {
		if got := ClassOf(c.err); got != c.want {
			t.Errorf("ClassOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// headerTimeout is net/http's "timeout awaiting response headers".
type headerTimeout struct{}

func (headerTimeout) Error() string   { return "net/http: timeout awaiting response headers" }
func (headerTimeout) Timeout() bool   { return true }
func (headerTimeout) Temporary() bool { return true }

func TestRetryAfter(t *testing.T) {
	if d := retryAfter("3"); d != 3*time.Second {
		t.Fatalf("seconds: %s", d)
	}
	if d := retryAfter(time.Now().Add(10 * time.Second).UTC().Format(time.RFC1123)); d < 8*time.Second || d > 11*time.Second {
		t.Fatalf("date: %s", d)
	}
	if d := retryAfter("soon"); d != 0 {
		t.Fatalf("garbage: %s", d)
	}
}

func TestDo_StopsOnNonRetryable(t *testing.T) {
	calls := 0
	out, err := Do(context.Background(), Policy{Initial: time.Millisecond, Multiplier: 2, Max: time.Millisecond, Budget: time.Second}, "op", func(context.Context) error {
		calls++
		return transport.ErrAuthenticationRequired
	})
	if calls != 1 || out.Attempts != 1 || ClassOf(err) != ClassAuth {
		t.Fatalf("calls %d, outcome %+v, err %v", calls, out, err)
	}
	calls = 0
	out, err = Do(context.Background(), Policy{Initial: time.Millisecond, Multiplier: 2, Max: time.Millisecond, Budget: time.Second}, "op", func(context.Context) error {
		calls++
		if calls < 3 {
			return syscall.ECONNRESET
		}
		return nil
	})
	if err != nil || out.Attempts != 3 {
		t.Fatalf("outcome %+v, err %v", out, err)
	}
}
