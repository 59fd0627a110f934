package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/agent"
)

// routePattern finds the patterns registered in this package's files.
var routePattern = regexp.MustCompile(`mux\.(?:HandleFunc|Handle)\("([A-Z]+ /[^"]*)"`)

// TestAgentSocket_EveryAgentRouteIsScoped: every route with an {id}, as
// registered in this package's source (a route added later included), when
// asked on agent "a1"'s own socket about another agent, answers 403 and
// never reaches that agent.
func TestAgentSocket_EveryAgentRouteIsScoped(t *testing.T) {
	t.Parallel()
	cfg := &agent.Config{Home: t.TempDir()}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	// "other" is managed (so a missing check would reach it, not 404).
	if err := d.Manage("other"); err != nil {
		t.Fatal(err)
	}
	h := scoped("a1", d.AgentHandler("unix:///admin.sock"))

	files, _ := filepath.Glob("*.go")
	var patterns []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range routePattern.FindAllStringSubmatch(string(src), -1) {
			patterns = append(patterns, m[1])
		}
	}
	patterns = append(patterns, operatorPatterns...)
	checked := 0
	for _, p := range patterns {
		if !strings.Contains(p, "{id}") {
			continue
		}
		method, path, _ := strings.Cut(p, " ")
		path = strings.NewReplacer("{id}", "other", "{name}", "persona").Replace(path)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(`{"command":"view","path":"/memories"}`)))
		var answer struct {
			Error string `json:"error"`
		}
		json.Unmarshal(rec.Body.Bytes(), &answer)
		if rec.Code != http.StatusForbidden || answer.Error == "" {
			t.Errorf("%s on a1's own socket about agent other: %d %s, want 403 with an error", p, rec.Code, rec.Body.Bytes())
		}
		checked++
	}
	if checked < 8 {
		t.Fatalf("only %d routes with {id} found: the pattern scan is broken", checked)
	}
	// Not scoped (the shared socket): the same route reaches the agent.
	rec := httptest.NewRecorder()
	d.AgentHandler("unix:///admin.sock").ServeHTTP(rec, httptest.NewRequest("GET", "/v1/agents/other/reminders", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("shared socket: reminders of other = %d", rec.Code)
	}
}
