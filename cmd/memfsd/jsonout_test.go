package main_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/internal/gitserver"
)

// TestJSONOutput_NoHTMLEscapes: what the CLI prints as JSON (search
// --json, show --json, status --json, a turn's answer) keeps <, > and & as
// they are, not \u003c, \u003e and \u0026 (issue 28), and is still JSON.
func TestJSONOutput_NoHTMLEscapes(t *testing.T) {
	t.Parallel()
	srv := gitserver.New(t, token)
	// The home's name carries the characters too: status and the turn's
	// answer name the folder.
	home := filepath.Join(t.TempDir(), "h<&>")
	p := startDaemon(t, srv, home, "--agent", "js")
	if out, isErr := p.memory("js", `{"command":"create","path":"/memories/notes/cmp.md","file_text":"---\ndescription: a <b> & c\n---\nif a < b && c > d then swap\n"}`); isErr {
		t.Fatal(out)
	}
	for _, args := range [][]string{
		{"search", "--agent", "js", "--json", "swap"},
		{"show", "--agent", "js", "--path", "notes/cmp.md", "--json"},
		{"turn", "--agent", "js"},
		{"status", "--agent", "js", "--json"},
		{"status", "--json"},
	} {
		out, err := exec.Command(binPath, append(args, "--home", home)...).Output()
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && args[0] == "status") { // status exits 2 when not clean
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		s := string(out)
		if !json.Valid(out) {
			t.Fatalf("%v: not JSON:\n%s", args, s)
		}
		for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(s, esc) {
				t.Errorf("%v prints %s:\n%s", args, esc, s)
			}
		}
		if !strings.Contains(s, "<&>") && !strings.Contains(s, "a < b && c > d") {
			t.Errorf("%v: no < & > as they are:\n%s", args, s)
		}
	}
}
