package retry

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// UnresolvedHostError is a request whose remote host name did not resolve
// (a typo in the URL, or no DNS on this machine). It names the host and
// the URL instead of go-git's "Get ...: dial tcp: lookup ..." string, and
// has its own next step: no retry fixes a wrong URL.
type UnresolvedHostError struct {
	Host string // the name that did not resolve
	URL  string // the request's URL without user-info and query ("" unknown)
	Err  error  // the whole cause
	dns  *net.DNSError
}

func (e *UnresolvedHostError) Error() string {
	s := fmt.Sprintf("the remote's host %s does not resolve (%s)", e.Host, e.dns.Err)
	if e.URL != "" {
		s += ": " + e.URL
	}
	return s
}

func (e *UnresolvedHostError) Unwrap() error { return e.Err }

// NextStep says what to check; commits (if any) wait, nothing is lost.
func (e *UnresolvedHostError) NextStep() string {
	return "check the remote's URL (--base-url / --remote-template, an agent's remote_url, shared attach --remote, mirror set --url) and this machine's DNS and network; memfsd tries again at the next sync, and nothing written is lost meanwhile"
}

// unresolvedHost finds a failed name lookup in err's chain, looking inside
// go-git's UnexpectedError (which has no Unwrap) as classify does.
func unresolvedHost(orig error) *UnresolvedHostError {
	for err := orig; err != nil; {
		var dns *net.DNSError
		if errors.As(err, &dns) && dns.Name != "" {
			h := &UnresolvedHostError{Host: dns.Name, Err: orig, dns: dns}
			var ue *url.Error
			if errors.As(err, &ue) {
				if u, perr := url.Parse(ue.URL); perr == nil {
					u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
					// The repository's URL, not the smart-HTTP route.
					for _, route := range []string{"/info/refs", "/git-upload-pack", "/git-receive-pack"} {
						u.Path = strings.TrimSuffix(u.Path, route)
					}
					h.URL = u.String()
				}
			}
			return h
		}
		var pe *plumbing.UnexpectedError
		if !errors.As(err, &pe) {
			return nil
		}
		err = pe.Err
	}
	return nil
}

// HostStatusError is an HTTP answer the remote gave instead of the
// protocol's (401, 403, 404, 429, 5xx, ...): its status and the first line
// of what it said, on the repository's URL, instead of go-git's
// "unexpected client error: unexpected requesting ... status code: 503"
// (or "authentication required: Unauthorized\n").
type HostStatusError struct {
	Status int
	Reason string // the first line of the answer's body, bounded ("" none)
	URL    string // the repository's URL without user-info and query ("" unknown)
	Action string // "push" or "fetch", from the request's route ("" unknown)
	Err    error  // the whole cause
	raw    string // go-git's text for the answer, within Err's
}

// Error is the cause's text with go-git's words for the answer replaced
// by the remote's (what the layers above added kept: the operation, a
// token file re-read, ...).
func (e *HostStatusError) Error() string {
	s := e.says()
	if e.raw != "" {
		if whole := e.Err.Error(); strings.Contains(whole, e.raw) {
			return strings.Replace(whole, e.raw, s, 1)
		}
	}
	return s
}

// says is the remote's answer in memfsd's words.
func (e *HostStatusError) says() string {
	s := fmt.Sprintf("the remote answered HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Action != "" {
		s += " to a " + e.Action
	}
	if e.URL != "" {
		s += " on " + e.URL
	}
	if e.Reason != "" && !strings.EqualFold(e.Reason, http.StatusText(e.Status)) {
		s += ": " + e.Reason
	}
	return s
}

func (e *HostStatusError) Unwrap() error { return e.Err }

// maxReason bounds the host's words kept in a message.
const maxReason = 200

// reasonLine is the first non-empty line of a host's answer, bounded and
// without control characters.
func reasonLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, l))
		if l == "" {
			continue
		}
		if len(l) > maxReason {
			l = strings.ToValidUTF8(l[:maxReason], "") + "…"
		}
		return l
	}
	return ""
}

// repoURL is a request's URL as the repository's: no user-info, query or
// smart-HTTP route.
func repoURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment = nil, "", false, ""
	for _, route := range []string{"/info/refs", "/git-upload-pack", "/git-receive-pack"} {
		c.Path = strings.TrimSuffix(c.Path, route)
	}
	c.RawPath = ""
	return c.String()
}

// hostStatus finds the remote's HTTP answer in err's chain: go-git's
// status error (inside its UnexpectedError, which has no Unwrap), or the
// 401/403/404 it turns into transport's sentinels with the body's text.
func hostStatus(orig error) *HostStatusError {
	var he *githttp.Err
	raw := ""
	for err := orig; err != nil; {
		if errors.As(err, &he) && he.Response != nil {
			if raw == "" {
				raw = he.Error()
			}
			h := &HostStatusError{Status: he.Response.StatusCode, Reason: reasonLine(he.Reason), Err: orig, raw: raw}
			if r := he.Response.Request; r != nil && r.URL != nil {
				h.URL = repoURL(r.URL)
				switch {
				case strings.HasSuffix(r.URL.Path, "/git-receive-pack"), r.URL.Query().Get("service") == "git-receive-pack":
					h.Action = "push"
				case strings.HasSuffix(r.URL.Path, "/git-upload-pack"), r.URL.Query().Get("service") == "git-upload-pack":
					h.Action = "fetch"
				}
			}
			return h
		}
		var pe *plumbing.UnexpectedError
		if !errors.As(err, &pe) {
			break
		}
		if raw == "" {
			raw = pe.Error()
		}
		err = pe.Err
	}
	for _, s := range []struct {
		sentinel error
		status   int
	}{{transport.ErrAuthenticationRequired, http.StatusUnauthorized}, {transport.ErrAuthorizationFailed, http.StatusForbidden}, {transport.ErrRepositoryNotFound, http.StatusNotFound}} {
		// go-git's http transport: fmt.Errorf("%w: %s", sentinel, body).
		for err := orig; err != nil; err = errors.Unwrap(err) {
			if errors.Unwrap(err) != s.sentinel {
				continue
			}
			rest, ok := strings.CutPrefix(err.Error(), s.sentinel.Error()+": ")
			if !ok {
				return nil // another transport's words: kept as they are
			}
			return &HostStatusError{Status: s.status, Reason: reasonLine(rest), Err: orig, raw: err.Error()}
		}
	}
	return nil
}

// unexpectedInner is go-git's "unexpected client error: X" as X: the
// cause's own words without go-git's prefix (nil when err has none).
type unexpectedInner struct {
	msg string
	err error
}

func (e *unexpectedInner) Error() string { return e.msg }
func (e *unexpectedInner) Unwrap() error { return e.err }

// withoutUnexpected strips go-git's "unexpected client error: " from err's
// text, keeping its chain.
func withoutUnexpected(err error) error {
	msg := err.Error()
	const p = "unexpected client error: "
	if !strings.Contains(msg, p) {
		return err
	}
	return &unexpectedInner{msg: strings.Replace(msg, p, "", 1), err: err}
}
