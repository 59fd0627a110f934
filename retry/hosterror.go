package retry

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
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
