package blocks

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestValidateLettaFrontMatter_AsLettaCode: every case answered as
// letta-code 0.32.18's own validateMemoryFileFrontmatter answers it. The
// fixture is its output: testdata/letta-frontmatter.gen.js run with node
// over the function cut from the npm package's letta.js (see the header of
// that script).
func TestValidateLettaFrontMatter_AsLettaCode(t *testing.T) {
	data, err := os.ReadFile("testdata/letta-frontmatter.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Path     string   `json:"path"`
		Content  string   `json:"content"`
		Previous *string  `json:"previous"`
		V2       bool     `json:"v2"`
		Errors   []string `json:"errors"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		var prev []byte
		if c.Previous != nil {
			prev = []byte(*c.Previous)
		}
		got := ValidateLettaFrontMatter(c.Path, c.Content, prev, c.V2)
		if !slices.Equal(got, c.Errors) && !(len(got) == 0 && len(c.Errors) == 0) {
			t.Errorf("%s %q (previous %q, v2 %v):\n got %q\nwant %q", c.Path, c.Content, prev, c.V2, got, c.Errors)
		}
	}
}

// TestLettaRulesApply: system/ and reference/ in v1; in v2 every .md
// outside skills/ whose folders all have a MEMORY.md.
func TestLettaRulesApply(t *testing.T) {
	have := map[string]bool{"MEMORY.md": true, "a/MEMORY.md": true}
	exists := func(p string) bool { return have[p] }
	for _, c := range []struct {
		path string
		v2   bool
		want bool
	}{
		{"system/x.md", false, true},
		{"reference/deep/x.md", false, true},
		{"memory/system/x.md", false, true},
		{"notes/x.md", false, false},
		{"system/x.txt", false, false},
		{"x.md", true, true},
		{"a/x.md", true, true},
		{"a/b/x.md", true, false},
		{"skills/s/SKILL.md", true, false},
		{"a/x.txt", true, false},
	} {
		if got := LettaRulesApply(c.path, c.v2, exists); got != c.want {
			t.Errorf("LettaRulesApply(%q, v2 %v) = %v, want %v", c.path, c.v2, got, c.want)
		}
	}
}
