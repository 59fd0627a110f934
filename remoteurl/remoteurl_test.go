package remoteurl_test

import (
	"testing"

	"github.com/memfsd/memfsd/remoteurl"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://u:secret@host/x":                    "https://redacted@host/x",
		"https://host/x?access_token=secret&a=1":     "https://host/x?a=redacted&access_token=redacted",
		"https://u:pw@host/x?private_token=abc#f":    "https://redacted@host/x?private_token=redacted#f",
		"memfsd:///home/m/remote/v1/git/a/state.git": "memfsd:///home/m/remote/v1/git/a/state.git",
		// Opaque: no "//", so url.Parse has no user-info to take.
		"https:u:secret@host/x":  "https:redacted@host/x",
		"http:secret@host":       "http:redacted@host",
		"https:host/x":           "https:host/x",
		"https:u:p@ss@host/x?q=": "https:redacted@host/x?q=redacted",
		// Unparsable: {agent} in the host, a space, a bad port, a control
		// character, a password with "/" and "@" in it.
		"https://u:secret@{agent}.example.com/x.git": "https://redacted@{agent}.example.com/x.git",
		"https://{agent}.example.com/x.git":          "https://{agent}.example.com/x.git",
		"https://u:sec ret@host/x":                   "https://redacted@host/x",
		"https://u:secret@host:port/x":               "https://redacted@host:port/x",
		"https://u:secret@host/x\n":                  "https://redacted@host/x\n",
		"https://u:se/cr@et@ho st/x?access_token=t":  "https://redacted@ho st/x?redacted",
		"ht tp:u:secret@host":                        "ht tp:redacted@host",
	} {
		if got := remoteurl.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
