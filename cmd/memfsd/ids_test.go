package main_test

import (
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// Agent ids follow one rule everywhere (letters, digits, . _ -, not
// starting with . or -); `turn` exits non-zero on an error answer; an
// unknown agent's reminders name it (issue 28).
func TestIDs_OneRuleAndExitCodes(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	home := t.TempDir()
	p := startDaemon(t, srv, home, "--agent", "known")
	for _, id := range []string{".hidden", ".git", "-rf"} {
		for _, args := range [][]string{
			{"status", "--agent=" + id},
			{"sync", "--agent=" + id},
			{"turn", "--agent=" + id},
		} {
			if code, out := runCLI(t, srv, home, args...); code == 0 || !strings.Contains(out, "bad agent id") {
				t.Errorf("memfsd %s: exit %d: %s", strings.Join(args, " "), code, out)
			}
		}
		var answer struct {
			Error string `json:"error"`
		}
		if code, err := p.adminCall("PUT", "/v1/agents/"+id, "", &answer); err != nil || code != 400 || !strings.Contains(answer.Error, "bad agent id") {
			t.Errorf("PUT /v1/agents/%s: %d %v %q", id, code, err, answer.Error)
		}
	}
	if code, out := runCLI(t, srv, home, "turn", "--agent", "unknown", "--wait", "1s"); code == 0 || !strings.Contains(out, "unknown") {
		t.Fatalf("turn --agent unknown: exit %d: %s", code, out)
	}
	code, out := runCLI(t, srv, home, "reminders", "--agent", "typo")
	if code == 0 || !strings.Contains(out, `no agent "typo"`) || strings.Contains(out, "status typo") {
		t.Fatalf("reminders --agent typo: exit %d: %s", code, out)
	}
	if code, out := runCLI(t, srv, home, "turn", "--agent", "known", "--wait", "10s"); code != 0 {
		t.Fatalf("turn --agent known: exit %d: %s", code, out)
	}
}
