// Package remoteurl is memfsd's rules for remote URLs: a URL template
// with {agent} (ParseTemplate) and a URL shown without its credentials
// (Redact).
package remoteurl

import (
	"fmt"
	"net/url"
	"strings"
)

// Placeholder is replaced by the agent id in a remote template.
const Placeholder = "{agent}"

// Probe stands for {agent} while a template is parsed.
const Probe = "memfsd-agent-probe"

// ParseTemplate checks a URL template (flag names it in errors): http(s),
// a host, {agent} in the path only (never in the host, credentials, query
// or fragment), no query or fragment. The URL comes back with {agent} as
// Probe.
func ParseTemplate(flag, raw string) (*url.URL, error) {
	if !strings.Contains(raw, Placeholder) {
		return nil, fmt.Errorf("config: %s %q: it must contain {agent}, replaced by the agent id (e.g. https://git.example.com/memory/{agent}.git)", flag, Redact(raw))
	}
	u, err := url.Parse(strings.ReplaceAll(raw, Placeholder, Probe))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("config: %s %q: want http(s)://host[:port]/path/with/{agent}", flag, Redact(raw))
	}
	if strings.Contains(u.Host, Probe) || strings.Contains(u.RawQuery, Probe) || strings.Contains(u.Fragment, Probe) ||
		(u.User != nil && strings.Contains(u.User.String(), Probe)) || !strings.Contains(u.Path, Probe) {
		return nil, fmt.Errorf("config: %s %q: {agent} may stand only in the path", flag, Redact(raw))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("config: %s %q: a query string or fragment is not allowed; put the token in MEMFSD_TOKEN or --token-file", flag, Redact(raw))
	}
	return u, nil
}

// Redact strips credentials from a URL for display: the user-info and
// every query value (a token in ?access_token= is as secret as a password).
// A URL that does not parse (a {agent} in the host, a space, a bad port) is
// shown with everything between "//" and its last "@" redacted and its query
// cut; an opaque URL (https:user:token@host, no "//") loses what is before
// its last "@" too. Nothing of a token reaches a log, a status or an error.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redactUnparsed(raw)
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if i := strings.LastIndex(u.Opaque, "@"); i >= 0 {
		u.Opaque = "redacted" + u.Opaque[i:]
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"redacted"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactUnparsed redacts a URL url.Parse refused: the user-info (between
// "//", or the scheme's ":" when there is no "//", and the last "@") and the
// query. It does not guess where a password ends: a password with "/" or "?"
// in it is still before the last "@".
func redactUnparsed(raw string) string {
	start := 0
	if i := strings.Index(raw, "//"); i >= 0 {
		start = i + 2
	} else if i := strings.Index(raw, ":"); i >= 0 {
		start = i + 1
	}
	if at := strings.LastIndex(raw[start:], "@"); at >= 0 {
		raw = raw[:start] + "redacted" + raw[start+at:]
	}
	if q := strings.Index(raw[start:], "?"); q >= 0 {
		raw = raw[:start+q] + "?redacted"
	}
	return raw
}
