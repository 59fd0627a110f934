package retry_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/memfsd/memfsd/retry"
)

// answer is the error go-git's HTTP transport makes of the remote's answer
// status with body to a request on rawURL.
func answer(t *testing.T, status int, body, rawURL string) error {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return githttp.NewErr(&http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body)),
		Header: http.Header{}, Request: &http.Request{Method: "POST", URL: u}})
}

// TestWrap_HostStatus (issue 39): the remote's HTTP answer is said as the
// remote's status and first line, on the repository's URL and whether it
// was a push or a fetch; never go-git's "unexpected client error:
// unexpected requesting ... status code" nor its smart-HTTP route, never
// a newline of the body, never the user-info; the class named once by
// OneClass; the class and the chain kept (Retry-After too).
func TestWrap_HostStatus(t *testing.T) {
	const repo = "http://127.0.0.1:8080/v1/git/a3/state.git"
	for _, c := range []struct {
		cause error
		class retry.Class
		want  []string
	}{
		{fmt.Errorf("push: %w", answer(t, 503, "", "http://bob:secret@127.0.0.1:8080/v1/git/a3/state.git/git-receive-pack")), retry.ClassRetryable,
			[]string{"retryable: sync a3: push: the remote answered HTTP 503 Service Unavailable to a push on " + repo}},
		{fmt.Errorf("pull: fetch: %w", answer(t, 502, "upstream down\nretry later\n", repo+"/info/refs?service=git-upload-pack")), retry.ClassRetryable,
			[]string{"the remote answered HTTP 502 Bad Gateway to a fetch on " + repo + ": upstream down"}},
		{fmt.Errorf("push: %w", answer(t, 401, "Unauthorized\n", repo+"/info/refs?service=git-receive-pack")), retry.ClassAuth,
			[]string{"auth: sync a3: push: the remote answered HTTP 401 Unauthorized"}},
		{answer(t, 403, "token lacks write scope\n", repo+"/git-receive-pack"), retry.ClassAuth,
			[]string{"the remote answered HTTP 403 Forbidden: token lacks write scope"}},
		{answer(t, 404, "", repo+"/info/refs"), retry.ClassNotFound, []string{"the remote answered HTTP 404 Not Found"}},
		{answer(t, 418, "teapot\x1b[31m", repo+"/git-upload-pack"), retry.ClassPermanent, []string{"HTTP 418", ": teapot [31m"}},
	} {
		err := retry.Wrap("sync a3", c.cause)
		line := retry.OneClass(string(retry.ClassOf(err)), err.Error())
		if retry.ClassOf(err) != c.class {
			t.Errorf("%q: class %s, want %s", line, retry.ClassOf(err), c.class)
		}
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%q lacks %q", line, w)
			}
		}
		for _, not := range []string{"unexpected", "git-receive-pack", "info/refs", "service=", "secret", "bob", "\n", "\x1b"} {
			if strings.Contains(line, not) {
				t.Errorf("%q says %q", line, not)
			}
		}
		if n := strings.Count(line, string(c.class)+": "); n != 1 {
			t.Errorf("%q names its class %d times", line, n)
		}
		var hs *retry.HostStatusError
		if !errors.As(err, &hs) {
			t.Errorf("%q: no HostStatusError in the chain", line)
		}
	}
	// The chain is kept: go-git's sentinels are still found.
	if err := retry.Wrap("clone x", answer(t, 401, "", repo)); !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Errorf("401: the sentinel is lost: %v", err)
	}
	// A 429 stays retryable.
	tooMany := answer(t, 429, "", repo+"/git-receive-pack")
	if e := (*retry.Error)(nil); !errors.As(retry.Wrap("push", tooMany), &e) || e.Class != retry.ClassRetryable {
		t.Errorf("429: %v", e)
	}
}
