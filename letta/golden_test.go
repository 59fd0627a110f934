package letta

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readTree loads a fixture tree as a commit of it would hold it.
func readTree(t testing.TB, dir string) []File {
	t.Helper()
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, File{Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRender_Golden renders testdata/letta/{v1,v2}/tree and expects what
// letta-code 0.32.18's own renderers printed for them (scripts/letta-golden.sh).
func TestRender_Golden(t *testing.T) {
	v1 := readTree(t, "../testdata/letta/v1/tree")
	v2 := readTree(t, "../testdata/letta/v2/tree")
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		golden string
		render func() string
	}{
		{"v1/letta-code.golden", func() string { return Snapshot(v1, SnapshotOptions{}) }},
		{"v1/letta-code.max-chars-sweep.golden", func() string { return sweep(t, v1, "v1/letta-code.max-chars-sweep.golden") }},
		{"v1/letta-code.tree-max-lines-40.golden", func() string {
			return Snapshot(v1, SnapshotOptions{Tree: TreeLimitsFromEnv(env("LETTA_MEMFS_TREE_MAX_LINES", "40"))})
		}},
		{"v1/letta-code.tree-max-chars-1000-children-5.golden", func() string {
			return Snapshot(v1, SnapshotOptions{Tree: TreeLimitsFromEnv(env("LETTA_MEMFS_TREE_MAX_CHARS", "1000", "LETTA_MEMFS_TREE_MAX_CHILDREN_PER_DIR", "5"))})
		}},
		{"v1/letta-local.golden", func() string { return LocalProjection(v1) }},
		{"v2/letta-code.golden", func() string { return Snapshot(v2, SnapshotOptions{}) }},
		{"v2/letta-code.max-chars-sweep.golden", func() string { return sweep(t, v2, "v2/letta-code.max-chars-sweep.golden") }},
		{"v2/letta-local.golden", func() string { return LocalProjection(v2) }},
	} {
		t.Run(strings.ReplaceAll(c.golden, "/", "_"), func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("../testdata/letta", c.golden))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.render(); got != string(want) {
				t.Fatalf("differs from letta-code's rendering at %s", firstDiff(got, string(want)))
			}
		})
	}
}

// sweep renders the snapshot at each cap the golden has, as the script's
// --max-chars-sweep prints it: from "</memory_filesystem>" on.
func sweep(t *testing.T, files []File, golden string) string {
	data, err := os.ReadFile(filepath.Join("../testdata/letta", golden))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range regexp.MustCompile(`(?m)^=== max-chars (\d+) ===$`).FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[1])
		text := Snapshot(files, SnapshotOptions{MaxChars: n})
		b.WriteString("=== max-chars " + strconv.Itoa(n) + " ===\n" + text[strings.Index(text, "</memory_filesystem>"):] + "\n")
	}
	return b.String()
}

// firstDiff describes where two renderings part: line number and both lines.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q", i+1, gl, wl)
		}
	}
	return "(equal lines, different bytes)"
}
