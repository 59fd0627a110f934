package wire_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/memfsd/memfsd/wire"
)

// TestShortcutRefused: a 4xx other than auth, not-found and rate limits
// means the server wants the advertisement first, wrapped by go-git in an
// UnexpectedError (no Unwrap in go-git 5.x) or not.
func TestShortcutRefused(t *testing.T) {
	t.Parallel()
	status := func(code int) error { return &githttp.Err{Response: &http.Response{StatusCode: code}} }
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{status(400), true},
		{status(415), true},
		{&plumbing.UnexpectedError{Err: status(405)}, true},
		{fmt.Errorf("push: %w", status(422)), true},
		{status(401), false},
		{status(403), false},
		{status(404), false},
		{status(429), false},
		{status(500), false},
		{errors.New("connection refused"), false},
	} {
		if got := wire.ShortcutRefused(tc.err); got != tc.want {
			t.Errorf("ShortcutRefused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestIsRemoteRejection(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{
		"non-fast-forward update: refs/heads/main":               true,
		"command error on refs/heads/main: non-fast-forward":     true,
		"command error on refs/heads/main: failed to update ref": true,
		"! [rejected] main -> main (fetch first)":                true,
		"unpack error: cannot lock ref 'refs/heads/main'":        true,
		"stale info": true,
		"unexpected client error: unexpected requesting status code: 520": false,
	} {
		if got := wire.IsRemoteRejection(errors.New(msg)); got != want {
			t.Errorf("IsRemoteRejection(%q) = %v, want %v", msg, got, want)
		}
	}
}
