package merge3_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/gitfmt/merge3"
)

func TestMerge3(t *testing.T) {
	base := "a\nb\nc\nd\ne\n"
	cases := []struct {
		name, ours, theirs, want string
		ok                       bool
	}{
		{"different lines", "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "A\nb\nc\nd\nE\n", true},
		{"same change both sides", "a\nB\nc\nd\ne\n", "a\nB\nc\nd\ne\n", "a\nB\nc\nd\ne\n", true},
		{"insert and delete apart", "a\nb\nx\nc\nd\ne\n", "a\nb\nc\nd\n", "a\nb\nx\nc\nd\n", true},
		{"same line differently", "a\nB1\nc\nd\ne\n", "a\nB2\nc\nd\ne\n", "", false},
		{"append both", base + "ours\n", base + "theirs\n", "", false},
		{"no final newline", "A\nb\nc\nd\ne", "a\nb\nc\nd\ne\nf\n", "", false},
	}
	for _, c := range cases {
		got, ok := merge3.Merge([]byte(base), []byte(c.ours), []byte(c.theirs))
		if ok != c.ok || (ok && string(got) != c.want) {
			t.Errorf("%s: got %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if _, ok := merge3.Merge([]byte("x\x00"), []byte("y\x00"), []byte("z\x00")); ok {
		t.Error("binary merged")
	}
}

// FuzzMerge3: one-sided edits come through exactly; no line added by either
// side is lost from the result plus the conflict copy.
func FuzzMerge3(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n")
	f.Add("a\nb\n", "a\nx\nb\n", "a\nb\ny\n")
	f.Add("", "new\n", "other\n")
	f.Add("l1\nl2\nl3\nl4\n", "l1\nl3\nl4\n", "l1\nl2\nl3\nl4\nl5")
	f.Fuzz(func(t *testing.T, base, a, b string) {
		if got, ok := merge3.Merge([]byte(base), []byte(a), []byte(base)); !ok || string(got) != a {
			if !strings.ContainsRune(base+a, 0) {
				t.Fatalf("merge(base, a, base) = %q %v, want a %q", got, ok, a)
			}
		}
		if got, ok := merge3.Merge([]byte(base), []byte(base), []byte(b)); !ok || string(got) != b {
			if !strings.ContainsRune(base+b, 0) {
				t.Fatalf("merge(base, base, b) = %q %v, want b %q", got, ok, b)
			}
		}
		got, ok := merge3.Merge([]byte(base), []byte(a), []byte(b))
		// On conflict memfsd keeps theirs (b) at the path and ours (a) as a
		// copy: both survive whole.
		kept := [][]byte{got}
		if !ok {
			kept = [][]byte{[]byte(b), []byte(a)}
		}
		baseLines := map[string]int{}
		for _, l := range strings.SplitAfter(base, "\n") {
			baseLines[l]++
		}
		for _, side := range []string{a, b} {
			for _, l := range strings.SplitAfter(side, "\n") {
				if l == "" || baseLines[l] > 0 {
					continue // a line from base may be deleted by the other side
				}
				found := false
				for _, k := range kept {
					if bytes.Contains(k, []byte(l)) {
						found = true
					}
				}
				if !found {
					t.Fatalf("line %q of a side lost: base %q a %q b %q -> %q %v", l, base, a, b, got, ok)
				}
			}
		}
	})
}
