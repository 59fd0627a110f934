package retry_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/retry"
	"github.com/memfsd/memfsd/worktree"
)

// TestNextStep_PerCause: each held state and each known cause of a
// permanent failure gets its own next step; none but a certificate error
// speaks of certificates.
func TestNextStep_PerCause(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("pull: %w", gitmem.ErrRemoteDeleteHeld), "--restore-deletes"},
		{fmt.Errorf("push: %w: 30 files", gitmem.ErrPushHeld), "--accept-deletes"},
		{fmt.Errorf("push: %w", gitmem.ErrPushSecret), "credential"},
		{fmt.Errorf("commit: %w", gitmem.ErrLocked), "remove the .lock file"},
		{fmt.Errorf("commit: %w", worktree.ErrUntrackable), "cannot track"},
		{fmt.Errorf("write: %w", syscall.ENOSPC), "full"},
		{fmt.Errorf("write: %w", syscall.EACCES), "permissions"},
		{fmt.Errorf("fetch: %w", x509.UnknownAuthorityError{}), "certificate"},
		{fmt.Errorf("something odd"), "read the cause"},
		{fmt.Errorf("push: read commit 1234: %w", plumbing.ErrObjectNotFound), "clone afresh"},
	} {
		got := retry.NextStep(c.err)
		if !strings.Contains(got, c.want) {
			t.Errorf("NextStep(%v) = %q, want it to say %q", c.err, got, c.want)
		}
		if c.want != "certificate" && strings.Contains(got, "certificate") {
			t.Errorf("NextStep(%v) = %q speaks of certificates", c.err, got)
		}
	}
}

// TestClass_HeldStates: each held state is a class of its own, held, with
// its own decision as the next step.
func TestClass_HeldStates(t *testing.T) {
	for _, c := range []struct {
		err   error
		class retry.Class
		step  string
	}{
		{fmt.Errorf("pull: %w", gitmem.ErrRemoteDeleteHeld), retry.ClassRemoteDeleteHeld, "--restore-deletes"},
		{fmt.Errorf("push: %w", gitmem.ErrPushHeld), retry.ClassMassDeleteHeld, "--accept-deletes"},
		{fmt.Errorf("push: %w", gitmem.ErrPushSecret), retry.ClassSecretHeld, "credential"},
	} {
		if got := retry.ClassOf(c.err); got != c.class || !got.Held() {
			t.Errorf("ClassOf(%v) = %q (held %v), want %q", c.err, got, got.Held(), c.class)
		}
		if got := retry.ClassOf(c.err).NextStep(); !strings.Contains(got, c.step) {
			t.Errorf("%s.NextStep() = %q, want %q in it", c.class, got, c.step)
		}
	}
	if retry.ClassPermanent.Held() || retry.ClassRetryable.Held() {
		t.Error("permanent or retryable counted as held")
	}
}

// TestWrap_UnresolvedHost: a name lookup that fails, as go-git's HTTP
// transport returns it (a url.Error around a dial's DNSError, bare or in
// go-git's UnexpectedError), is named by its host and URL (no user-info, no
// query, no smart-HTTP route), keeps its class (retryable) and its chain,
// and its next step says what to check, not "commits stay local".
func TestWrap_UnresolvedHost(t *testing.T) {
	lookup := &url.Error{Op: "Get", URL: "http://bob@no-such-host.invalid/v1/git/a/state.git/info/refs?service=git-upload-pack",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "no-such-host.invalid", IsNotFound: true}}}
	for _, cause := range []error{
		fmt.Errorf("clone: pull: fetch: %w", lookup),
		fmt.Errorf("push: %w", plumbing.NewUnexpectedError(lookup)),
	} {
		err := retry.Wrap("clone a", cause)
		msg := err.Error()
		for _, want := range []string{"clone a: retryable: ", "host no-such-host.invalid does not resolve (no such host)", "http://no-such-host.invalid/v1/git/a/state.git"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%q lacks %q", msg, want)
			}
		}
		for _, not := range []string{"bob", "dial tcp", "lookup", "info/refs", "service="} {
			if strings.Contains(msg, not) {
				t.Errorf("%q says %q", msg, not)
			}
		}
		if retry.ClassOf(err) != retry.ClassRetryable {
			t.Errorf("class %s, want retryable", retry.ClassOf(err))
		}
		var dns *net.DNSError
		if !errors.As(err, &dns) && !strings.HasPrefix(cause.Error(), "push") {
			t.Errorf("the DNSError is lost from the chain")
		}
		if step := retry.NextStep(err); !strings.Contains(step, "--base-url") || !strings.Contains(step, "DNS") || strings.Contains(step, "commits stay local") {
			t.Errorf("next step %q", step)
		}
	}
}
