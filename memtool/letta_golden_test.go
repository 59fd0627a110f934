package memtool_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/memtool"
)

// The letta-code dialect against letta-code's own tools: every case of
// testdata/letta/tool/cases.json (a memfs v1 or v2 folder and a call) was run
// by letta-code 0.32.18's applyMemoryCommand / applyMemoryPatch, taken from
// its bundle (scripts/letta-tool-golden.mjs), and expected.json holds what
// each wrote, byte for byte, or the error it threw.

type toolCases struct {
	Trees map[string]map[string]string `json:"trees"`
	Cases []struct {
		Name  string            `json:"name"`
		Tree  string            `json:"tree"`
		Files map[string]string `json:"files"`
		Tool  string            `json:"tool"`
		Args  json.RawMessage   `json:"args"`
	} `json:"cases"`
}

type toolExpected struct {
	Name    string             `json:"name"`
	Format  string             `json:"format"`
	Error   *string            `json:"error"`
	Changed map[string]*string `json:"changed"`
}

func readToolGolden(t *testing.T) (toolCases, []toolExpected) {
	t.Helper()
	var cases toolCases
	var want []toolExpected
	for file, v := range map[string]any{"cases.json": &cases, "expected.json": &want} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "letta", "tool", file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if len(cases.Cases) != len(want) {
		t.Fatalf("%d cases, %d expectations: run scripts/letta-golden.sh", len(cases.Cases), len(want))
	}
	return cases, want
}

// files is every file below the folder (not .git) with its bytes.
func (e *env) files() map[string]string {
	out := map[string]string{}
	filepath.Walk(e.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if fi.IsDir() {
			if fi.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(e.dir, p)
		data, _ := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	return out
}

// changedFiles is what differs between two listings (nil: removed).
func changedFiles(before, after map[string]string) map[string]*string {
	out := map[string]*string{}
	for p, b := range before {
		if a, ok := after[p]; !ok {
			out[p] = nil
		} else if a != b {
			out[p] = &a
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok {
			out[p] = &a
		}
	}
	return out
}

func showChanged(m map[string]*string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		if m[k] == nil {
			b.WriteString("\n  " + k + ": removed")
		} else {
			b.WriteString("\n  " + k + ": " + jsonString(*m[k]))
		}
	}
	return b.String()
}

func TestLetta_GoldenAgainstLettaCode(t *testing.T) {
	t.Parallel()
	cases, want := readToolGolden(t)
	for i, c := range cases.Cases {
		exp := want[i]
		t.Run(c.Name, func(t *testing.T) {
			if exp.Name != c.Name {
				t.Fatalf("expected.json has %q here: run scripts/letta-golden.sh", exp.Name)
			}
			tree := map[string]string{}
			for p, s := range cases.Trees[c.Tree] {
				tree[p] = s
			}
			for p, s := range c.Files {
				tree[p] = s
			}
			e := newEnvWith(t, tree, "tree")
			tool := c.Tool
			if tool == "" {
				tool = memtool.LettaMemory
			}
			// letta-code's harness adds the reason; its apply functions
			// never see it.
			var args map[string]any
			json.Unmarshal(c.Args, &args)
			args["reason"] = "golden"
			js, _ := json.Marshal(args)
			call, err := memtool.DecodeCall(js, memtool.LettaCode, tool)
			if err != nil {
				t.Fatal(err)
			}
			before, commits := e.files(), e.commits()
			res := e.tool.RunCall(call)
			got := changedFiles(before, e.files())
			if exp.Error != nil {
				wantErr := strings.ReplaceAll(*exp.Error, "{DIR}", e.dir)
				if !res.IsError || res.Content != wantErr {
					t.Fatalf("%s\n got: %q (error %v)\nwant: %q", js, res.Content, res.IsError, wantErr)
				}
				if len(got) != 0 || e.commits() != commits {
					t.Fatalf("a refused call changed the folder:%s", showChanged(got))
				}
				return
			}
			if res.IsError {
				t.Fatalf("%s: %s\nletta-code wrote:%s", js, res.Content, showChanged(exp.Changed))
			}
			if g, w := showChanged(got), showChanged(exp.Changed); g != w {
				t.Fatalf("%s (%s)\nmemfsd wrote:%s\nletta-code wrote:%s", js, exp.Format, g, w)
			}
			if e.commits() != commits+1 {
				t.Fatalf("%d commits, want 1", e.commits()-commits)
			}
			e.git("fsck", "--strict")
		})
	}
}
