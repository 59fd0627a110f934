package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestRun_FirstCloneHostDoesNotResolve: the first clone against a host
// that does not resolve (RFC 6761's .invalid) names the host and URL, its
// class, and what to check (the remote's URL, DNS, network), in the
// one-shot sync's error and in the daemon's status; no go-git words ("dial
// tcp", "lookup") and no "commits stay local" when there are none (issue
// 28: "retryable ... commits stay local" with go-git's string).
func TestRun_FirstCloneHostDoesNotResolve(t *testing.T) {
	t.Parallel()
	const base = "http://no-such-host.invalid/base"
	check := func(what, text string) {
		t.Helper()
		for _, want := range []string{"retryable", "host no-such-host.invalid does not resolve", base + "/v1/git/nr/state.git", "--base-url", "DNS"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, text)
			}
		}
		for _, not := range []string{"dial tcp", "lookup no-such-host", "commits stay local"} {
			if strings.Contains(text, not) {
				t.Errorf("%s says %q:\n%s", what, not, text)
			}
		}
	}
	home := t.TempDir()
	sync := exec.Command(binPath, "sync", "--agent", "nr", "--home", home, "--base-url", base)
	sync.Env = append(os.Environ(), "MEMFSD_TOKEN="+token)
	out, err := sync.CombinedOutput()
	if err == nil {
		t.Fatalf("sync exit 0:\n%s", out)
	}
	check("memfsd sync", string(out))

	// The later --base-url wins over the helper's.
	p := launchDaemon(t, gitserver.New(t, token), t.TempDir(), "--agent", "nr", "--base-url", base)
	var st struct {
		LastError *struct {
			Class, Message string
			NextStep       string `json:"next_step"`
		} `json:"last_error"`
	}
	waitFor(t, 60*time.Second, "the start-up clone's error in status", func() bool {
		code, err := p.get("/v1/agents/nr/status", &st)
		return err == nil && code == 200 && st.LastError != nil
	})
	b, _ := json.Marshal(st.LastError)
	check("status", string(b))
}
