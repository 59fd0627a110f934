package retry_test

import (
	"crypto/x509"
	"fmt"
	"strings"
	"syscall"
	"testing"

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
