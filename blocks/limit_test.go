package blocks_test

import (
	"strings"
	"testing"

	"github.com/memfsd/memfsd/blocks"
)

func TestCheckLimit(t *testing.T) {
	limited := func(limit, body string) []byte {
		return []byte("---\ndescription: d\nlimit: " + limit + "\n---\n" + body)
	}
	cases := []struct {
		name     string
		old, new []byte
		want     string
	}{
		{"WithinLimit", limited("10", "short"), limited("10", "0123456789"), ""},
		{"OverLimit", limited("10", "short"), limited("10", "0123456789x"), "Exceeds 10 character limit (requested 11)"},
		{"CharactersNotBytes", limited("3", ""), limited("3", "äöü"), ""},
		{"OldLimitHoldsWhenRemoved", limited("5", "ok"), []byte("no front matter, much longer than five"), "Exceeds 5 character limit (requested 38)"},
		{"NewFileDeclaresOne", nil, limited("4", "12345"), "Exceeds 4 character limit (requested 5)"},
		{"NoLimit", nil, []byte(strings.Repeat("x", 100000)), ""},
		{"NotANumber", limited("lots", ""), limited("lots", strings.Repeat("x", 100)), ""},
		{"Delete", limited("1", "x"), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := blocks.CheckLimit(c.old, c.new)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Fatalf("CheckLimit = %q, want %q", got, c.want)
			}
		})
	}
}
