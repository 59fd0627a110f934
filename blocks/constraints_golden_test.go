package blocks_test

import (
	"encoding/json"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/blocks"
)

// constraintCase is one case of testdata/letta/constraints/cases.json.
type constraintCase struct {
	Name   string                     `json:"name"`
	Policy string                     `json:"policy"`
	Head   map[string]json.RawMessage `json:"head"`
	Change map[string]json.RawMessage `json:"change"`
	Memfsd string                     `json:"memfsd"`
}

// caseContent is scripts/letta-constraints-golden.mjs's content(): a
// string, or {"chars": N, "fm": F}; nil for null (a deletion).
func caseContent(t *testing.T, rel string, raw json.RawMessage) []byte {
	if string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	var spec struct {
		Chars int    `json:"chars"`
		FM    string `json:"fm"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	head := ""
	switch spec.FM {
	case "v1":
		head = "---\ndescription: d\n---\n"
	case "v2":
		head = "---\nname: " + strings.TrimSuffix(path.Base(rel), ".md") + "\ndescription: d\n---\n"
	}
	return []byte(head + strings.Repeat("x", spec.Chars-len(head)))
}

// treeOf builds the constraints of a tree of files as letta-code's hook
// sees it (v2: its root-marker policy with a MEMORY.md in HEAD or in the
// tree).
func treeOf(files map[string][]byte, v2 bool, policy string) *blocks.TreeConstraints {
	tc := blocks.NewTreeConstraints()
	for rel, data := range files {
		if strings.HasSuffix(rel, ".md") {
			tc.Set(rel, blocks.FactsOf(rel, data, true))
		}
	}
	cfg, ok := files[blocks.ConstraintsConfigPath]
	if policy == "shared-memory" {
		tc.ConfigureShared(cfg, ok, true)
	} else {
		tc.Configure(v2, cfg, ok, true)
	}
	return tc
}

// TestTreeConstraints_Golden: memfsd's port says what letta-code's own
// pre-commit hook said for each case (testdata/letta/constraints, made by
// scripts/letta-constraints-golden.mjs), byte for byte, and memfsd holds
// exactly the changes that make the tree worse.
func TestTreeConstraints_Golden(t *testing.T) {
	t.Parallel()
	var cases struct {
		Cases []constraintCase `json:"cases"`
	}
	var expected []struct {
		Name   string `json:"name"`
		Exit   int    `json:"exit"`
		Output string `json:"output"`
	}
	for f, v := range map[string]any{"cases.json": &cases, "expected.json": &expected} {
		data, err := os.ReadFile("../testdata/letta/constraints/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	if len(expected) != len(cases.Cases) {
		t.Fatalf("%d cases, %d expected: regenerate with scripts/letta-golden.sh", len(cases.Cases), len(expected))
	}
	for i, c := range cases.Cases {
		t.Run(c.Name, func(t *testing.T) {
			want := expected[i]
			head := map[string][]byte{}
			for rel, raw := range c.Head {
				head[rel] = caseContent(t, rel, raw)
			}
			after := map[string][]byte{}
			for rel, data := range head {
				after[rel] = data
			}
			for rel, raw := range c.Change {
				if data := caseContent(t, rel, raw); data != nil {
					after[rel] = data
				} else {
					delete(after, rel)
				}
			}
			_, headRoot := head["MEMORY.md"]
			_, afterRoot := after["MEMORY.md"]
			rootMarker := c.Policy == "root-marker"
			before := treeOf(head, rootMarker && headRoot, c.Policy).Report(false, false)
			configChanged := string(head[blocks.ConstraintsConfigPath]) != string(after[blocks.ConstraintsConfigPath])
			got := treeOf(after, rootMarker && (headRoot || afterRoot), c.Policy).Report(headRoot, configChanged)
			if text := got.Text(blocks.StagedKept); text != want.Output {
				t.Errorf("hook output:\n%s\nletta-code's:\n%s", text, want.Output)
			}
			if got.Empty() != (want.Exit == 0) {
				t.Errorf("accepted %v, letta-code's exit %d", got.Empty(), want.Exit)
			}
			decision := "accept"
			if len(got.Worse(before)) > 0 {
				decision = "refuse"
			}
			if decision != c.Memfsd {
				t.Errorf("memfsd would %s, want %s (worse: %v)", decision, c.Memfsd, got.Worse(before))
			}
		})
	}
}
