package memcontext

import (
	"strings"
	"testing"
)

func TestDescribe_BinaryAndControlCharacters(t *testing.T) {
	t.Parallel()
	utf8Edge := strings.Repeat("a", binarySniff-1) + "é and on" // é cut at the sniff's edge
	for _, c := range []struct {
		name string
		data string
		want string
	}{
		{"nul", "PNG\x00\x01\x02", "(binary, 6 bytes)"},
		{"escape", "\x1b[31mred\n", "(binary, 9 bytes)"},
		{"latin-1", "caf\xe9\n", "(binary, 5 bytes)"},
		{"text", "first line\nsecond\n", "first line"},
		{"tab and CR are text, shown as a space", "a\tb\r\n", "a b"},
		{"utf-8 cut at the edge", utf8Edge, strings.Repeat("a", 120) + "…"},
		{"description with a newline escape", "---\ndescription: one\u2028two\n---\nbody\n", "one two"},
	} {
		if got := describe([]byte(c.data)); got != c.want {
			t.Errorf("%s: describe = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestRenderTree_QuotesOddNames(t *testing.T) {
	t.Parallel()
	tree, _ := renderTree([]treeFile{{path: "a\nb.md", desc: "x"}, {path: "caf\xe9/n.md"}}, 500, 20000, 50)
	for _, l := range strings.Split(tree, "\n") {
		if l == "b.md — x" || strings.Contains(l, "\xe9") {
			t.Fatalf("an odd name split or reached the tree raw:\n%s", tree)
		}
	}
	if !strings.Contains(tree, `"a\nb.md" — x`) || !strings.Contains(tree, `"caf\xe9"/`) {
		t.Fatalf("odd names not quoted:\n%s", tree)
	}
}
