package letta

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestCompare_AsNodeSorts sorts the names of testdata/letta/collation.txt
// and expects the order Node's localeCompare gave them (collation.golden,
// made by scripts/letta-golden.sh).
func TestCompare_AsNodeSorts(t *testing.T) {
	in, err := os.ReadFile("../testdata/letta/collation.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../testdata/letta/collation.golden")
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimRight(string(in), "\n"), "\n")
	slices.SortFunc(names, compare)
	wantNames := strings.Split(string(want), "\n")
	for i := range names {
		if names[i] != wantNames[i] {
			t.Fatalf("name %d: %q, Node sorts %q there (before it: %q)", i, names[i], wantNames[i], wantNames[max(0, i-1)])
		}
	}
}
