package main_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCredentials_OddURLsNeverLeak: a URL with a token that url.Parse
// refuses ({agent} in the host, a space) or reads as opaque
// (https:user:token@host, no "//") is named in the error with the token
// redacted, on every route that takes a URL (--base-url, --remote-template,
// shared attach --remote, mirror set --url). Before, the opaque form was
// printed whole and the unparsable one as "<unparsable url>".
func TestCredentials_OddURLsNeverLeak(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	const secret = "tok-s3cret"
	for _, c := range []struct{ url, shown string }{
		{"https:bob:" + secret + "@git.example.com/x/{agent}.git", "https:redacted@git.example.com/x/{agent}.git"},
		{"https://bob:" + secret + "@{agent}.example.com/x.git", "https://redacted@{agent}.example.com/x.git"},
		{"https://bob:tok s3cret@git.example.com/{agent}.git", "https://redacted@git.example.com/{agent}.git"},
	} {
		for _, args := range [][]string{
			{"run", "--agent", "a", "--base-url", c.url},
			{"run", "--agent", "a", "--remote-template", c.url},
			{"shared", "attach", "team", "--agent", "a", "--remote", c.url},
			{"mirror", "set", "--agent", "a", "--url", c.url},
		} {
			cmd := exec.Command(binPath, append(args, "--home", home)...)
			cmd.Env = append(os.Environ(), "MEMFSD_TOKEN=")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("%v: accepted\n%s", args, out)
			}
			if strings.Contains(string(out), "s3cret") || !strings.Contains(string(out), c.shown) {
				t.Errorf("%v: want the URL shown as %q, no token:\n%s", args, c.shown, out)
			}
		}
	}
}
