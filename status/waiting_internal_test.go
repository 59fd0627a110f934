package status

import (
	"strings"
	"testing"
)

// A last error whose text holds a newline (an auth error's server
// answer, a file name) is one line in `memfsd status` (issue 28).
func TestErrorLine_OneLine(t *testing.T) {
	t.Parallel()
	e := &LastError{Class: "auth", Message: "auth: push alice: 401 Unauthorized\nbad token\r\x1b[31m\xff", NextStep: "fix the token file\nthen wait"}
	got := ErrorLine(e)
	if strings.ContainsAny(got, "\n\r\x1b") {
		t.Fatalf("ErrorLine = %q: a control character breaks the line", got)
	}
	want := `auth: push alice: 401 Unauthorized\nbad token\r\u001b[31m\xff (next: fix the token file\nthen wait)`
	if got != want {
		t.Fatalf("ErrorLine = %q, want %q", got, want)
	}
	if ErrorLine(nil) != "-" {
		t.Fatal("no error is not -")
	}
	st := Status{Agent: "a", HeldDeletes: []string{"x\n.md", "b", "c", "d"}}
	w := Waiting(st)
	if len(w) != 1 || w[0] != `mass_delete_held: x\n.md, b, c and 1 more (memfsd sync --agent a --accept-deletes, or --restore-deletes)` {
		t.Fatalf("waiting = %q", w)
	}
}
