// Package retry sorts sync failures into memfsd's error classes (SPEC §4)
// and retries the retryable ones with backoff. Callers branch on the class,
// never on error text.
package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/memfsd/memfsd/gitmem"
)

// Class is a sync failure class, named as in status, metrics and logs.
type Class string

// The error classes of SPEC §4.
const (
	ClassNone             Class = ""
	ClassRetryable        Class = "retryable"
	ClassNonFastForward   Class = "non_fast_forward"
	ClassUnrelatedHistory Class = "unrelated_history"
	ClassAuth             Class = "auth"
	ClassNotFound         Class = "not_found"
	ClassPermanent        Class = "permanent"

	// Held states: nothing is retried until an operator decides (SPEC §8).
	ClassRemoteDeleteHeld Class = "remote_delete_held" // a remote update that would delete most of the memory
	ClassMassDeleteHeld   Class = "mass_delete_held"   // a push that would delete most of the memory
	ClassSecretHeld       Class = "secret_held"        // a commit to push holds a credential
)

// Held reports whether the class is a held state: a person decides, no
// retry helps.
func (c Class) Held() bool {
	return c == ClassRemoteDeleteHeld || c == ClassMassDeleteHeld || c == ClassSecretHeld
}

// NextStep is what a person or the agent should do about a class.
func (c Class) NextStep() string {
	switch c {
	case ClassRetryable:
		return "the server or network failed for now; commits stay local and memfsd pushes them by itself: retried in the background with backoff (push_retry in the status) and at the next sync"
	case ClassNonFastForward:
		return "another writer pushed first; the next sync fetches and replays local commits onto theirs"
	case ClassUnrelatedHistory:
		return "the remote history was replaced; the next sync keeps local files and backs up the old tip"
	case ClassAuth:
		return "check MEMFSD_TOKEN / --token-file and the username; nothing is retried until the next sync"
	case ClassNotFound:
		return "check --base-url / --remote-template and the agent id: the host has no such repository (with --create-remote memfsd creates it by pushing the default blocks, on hosts that create repositories on push)"
	case ClassRemoteDeleteHeld:
		return "the remote's update would delete most of the memory and is held: an operator decides with `memfsd sync --agent ID --accept-deletes` (apply the deletion) or `--restore-deletes` (put the files back on the remote); nothing is pushed until then"
	case ClassMassDeleteHeld:
		return "the push would delete most of the memory and is held: an operator decides with `memfsd sync --agent ID --accept-deletes` (push the deletion) or `--restore-deletes` (re-add the files); commits stay local until then"
	case ClassSecretHeld:
		return "a commit to push holds what looks like a credential: remove it from the file (the next commit then carries it no more) or rewrite the local commits; `--secret-pattern` / `--no-secret-guard` change what counts; nothing is pushed until then"
	case ClassPermanent:
		return "memfsd cannot carry on without a person: read the cause above; commits stay local, and the next sync tries again once it is fixed"
	default:
		return "see the cause; commits stay local"
	}
}

// Error is a failure with its class; it wraps the cause.
type Error struct {
	Op    string // the operation that failed: clone, pull, push, ...
	Class Class
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Op, e.Class, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Wrap classifies err and returns it as an *Error for op (nil stays nil).
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	c, after := classify(err)
	if h := unresolvedHost(err); h != nil {
		// The host, not go-git's words for the lookup.
		err = h
	} else if h := hostStatus(err); h != nil {
		// The remote's status and words, not go-git's.
		err = h
	} else {
		err = withoutUnexpected(err)
	}
	return &Error{Op: op, Class: c, RetryAfter: after, Err: err}
}

// WithoutClass is msg without the mention of its class that memfsd's own
// "op: class: cause" puts in it, for a line that names the class first
// (OneClass, `class=...`): the class said once.
func WithoutClass(class, msg string) string {
	msg = strings.TrimSpace(msg)
	if class == "" {
		return msg
	}
	msg = strings.TrimPrefix(msg, class+": ")
	return strings.Replace(msg, ": "+class+": ", ": ", 1)
}

// OneClass is msg as "class: msg", the class named once.
func OneClass(class, msg string) string {
	if class == "" {
		return strings.TrimSpace(msg)
	}
	return class + ": " + WithoutClass(class, msg)
}

// ClassOf returns the class of err (ClassNone for nil).
func ClassOf(err error) Class {
	if err == nil {
		return ClassNone
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	c, _ := classify(err)
	return c
}

// retryableStatus are the HTTP answers worth trying again.
func retryableStatus(code int) bool {
	switch {
	case code == 429, code == 500, code == 502, code == 503, code == 504:
		return true
	case code >= 520 && code <= 524:
		return true
	}
	return false
}

func classify(err error) (Class, time.Duration) {
	switch {
	case errors.Is(err, gitmem.ErrNonFastForward), errors.Is(err, gitmem.ErrRefMoved):
		return ClassNonFastForward, 0
	case errors.Is(err, gitmem.ErrUnrelatedHistory):
		return ClassUnrelatedHistory, 0
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return ClassAuth, 0
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return ClassNotFound, 0
	case errors.Is(err, gitmem.ErrLocked), errors.Is(err, gitmem.ErrPrimaryAhead), errors.Is(err, gitmem.ErrPersonGitActive):
		return ClassRetryable, 0
	case errors.Is(err, gitmem.ErrRemoteDeleteHeld):
		return ClassRemoteDeleteHeld, 0
	case errors.Is(err, gitmem.ErrPushHeld):
		return ClassMassDeleteHeld, 0
	case errors.Is(err, gitmem.ErrPushSecret):
		return ClassSecretHeld, 0
	case errors.Is(err, gitmem.ErrPushUntrackable):
		return ClassPermanent, 0 // a person drops the commit: retrying pushes the same tree
	case isCertificateError(err):
		return ClassPermanent, 0 // nothing to retry: a person fixes the certificate
	case errors.Is(err, context.DeadlineExceeded):
		return ClassRetryable, 0
	case errors.Is(err, dotgit.ErrPackfileNotFound):
		// A pack listed a moment ago is gone: a git gc or repack beside
		// the reader (the embedded remote's bare repository, or ours).
		return ClassRetryable, 0
	}
	// go-git wraps other HTTP statuses, and every transport error of its
	// POST requests (the pack exchange: a response-header or idle timeout,
	// a reset, an attempt's deadline), in an UnexpectedError that has no
	// Unwrap: classify its Err.
	var ue *plumbing.UnexpectedError
	if errors.As(err, &ue) && ue.Err != nil {
		var he *githttp.Err
		if errors.As(ue.Err, &he) && he.Response != nil {
			code := he.Response.StatusCode
			if retryableStatus(code) {
				return ClassRetryable, retryAfter(he.Response.Header.Get("Retry-After"))
			}
			return ClassPermanent, 0
		}
		return classify(ue.Err)
	}
	var he *githttp.Err
	if errors.As(err, &he) && he.Response != nil {
		if retryableStatus(he.Response.StatusCode) {
			return ClassRetryable, retryAfter(he.Response.Header.Get("Retry-After"))
		}
		return ClassPermanent, 0
	}
	var ne net.Error
	var ue2 *url.Error
	switch {
	case errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ClassRetryable, 0
	case errors.As(err, &ne) && ne.Timeout():
		return ClassRetryable, 0
	case errors.As(err, &ue2):
		return ClassRetryable, 0
	}
	// Push rejections arrive only as text (go-git has no sentinel for them).
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "failed to update ref", "fetch first", "stale info", "cannot lock ref"} {
		if strings.Contains(msg, s) {
			return ClassNonFastForward, 0
		}
	}
	for _, s := range []string{"connection reset", "connection refused", "unexpected EOF", "broken pipe", "use of closed network connection", "packfile not found"} {
		if strings.Contains(msg, s) {
			return ClassRetryable, 0
		}
	}
	return ClassPermanent, 0
}

// isCertificateError reports a TLS certificate the client refused: retrying
// cannot help, a person must fix the certificate or the CA bundle.
func isCertificateError(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
	)
	if errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verify) {
		return true
	}
	// go-git's UnexpectedError has no Unwrap: fall back to the text.
	msg := err.Error()
	return strings.Contains(msg, "x509: ") || strings.Contains(msg, "tls: failed to verify certificate")
}

// retryAfter parses a Retry-After header (seconds or an HTTP date).
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := time.Parse(time.RFC1123, v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
