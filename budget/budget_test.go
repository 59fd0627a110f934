package budget_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/memfsd/memfsd/budget"
)

// TestTokens_AsNode: the estimate equals letta-code's on the same bytes,
// Math.ceil(Buffer.byteLength(readFileSync(p, "utf8"), "utf8") / 4), for
// valid text and every kind of ill-formed UTF-8 (Node replaces each
// maximal subpart with U+FFFD). Vectors printed by node v20:
//
//	node -e 'for (const h of process.argv.slice(1)) { const t = Buffer.from(h, "hex").toString("utf8");
//	  console.log(h, Buffer.byteLength(t, "utf8"), Math.ceil(Buffer.byteLength(t, "utf8") / 4)) }' HEX...
func TestTokens_AsNode(t *testing.T) {
	for _, tc := range []struct {
		hex           string
		decoded, toks int
	}{
		{"", 0, 0},
		{"61", 1, 1},
		{"61626364", 4, 1},
		{"6162636465", 5, 2},
		{"68e96c6c6f", 7, 2},
		{"e52c9e", 7, 2},
		{"3d00", 2, 1},
		{"ff", 3, 1},
		{"c3", 3, 1},
		{"e282", 3, 1},
		{"e282ac", 3, 1},
		{"e228a1", 7, 2},
		{"f09f98", 3, 1},
		{"f09f9880", 4, 1},
		{"eda080", 9, 3},
		{"c0af", 6, 2},
		{"e080af", 9, 3},
		{"f4908080", 12, 3},
		{"f888808080", 15, 4},
		{"808080", 9, 3},
		{"61e28262", 5, 2},
		{"efbbbf2d2d2d0a", 7, 2},
		{"f09028bc", 7, 2},
		{"e180e2f09192f1bf41", 13, 4},
		{hex.EncodeToString([]byte("日本語 😀 ünïcödé")), 26, 7},
	} {
		data, _ := hex.DecodeString(tc.hex)
		if got := budget.Tokens(data); got != tc.toks {
			t.Errorf("Tokens(%s) = %d, node says %d (%d bytes decoded)", tc.hex, got, tc.toks, tc.decoded)
		}
		// Four copies: the byte count itself, not only its rounding.
		if got := budget.Tokens([]byte(strings.Repeat(string(data), 4))); got != tc.decoded {
			t.Errorf("Tokens(4 x %s) = %d, want %d", tc.hex, got, tc.decoded)
		}
	}
}

func TestPinned_AsLettaCode(t *testing.T) {
	for _, tc := range []struct {
		path, layout string
		want         bool
	}{
		{"system/persona.md", budget.LayoutV1, true},
		{"system/deep/er/notes.md", budget.LayoutV1, true},
		{"system/.hidden.md", budget.LayoutV1, false},
		{"system/.dir/x.md", budget.LayoutV1, false},
		{"system/notes.txt", budget.LayoutV1, false},
		{"system/.letta-policy.yml", budget.LayoutV1, false},
		{"reference/a.md", budget.LayoutV1, false},
		{"MEMORY.md", budget.LayoutV1, false},
		{"MEMORY.md", budget.LayoutV2, true},
		{"prefs.md", budget.LayoutV2, true},
		{".x.md", budget.LayoutV2, false},
		{"system/persona.md", budget.LayoutV2, false},
		{"notes.txt", budget.LayoutV2, false},
	} {
		if got := budget.Pinned(tc.path, tc.layout); got != tc.want {
			t.Errorf("Pinned(%s, %s) = %v", tc.path, tc.layout, got)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		ok   bool
		fail bool
	}{
		{"token_budget: 30000\n", 30000, true, false},
		{"# operator\nother: x\ntoken_budget: 12_000 # tighter\n", 12000, true, false},
		{"token_budget: \"5000\"\r\n", 5000, true, false},
		{"nested:\n  token_budget: 5\n", 0, false, false},
		{"", 0, false, false},
		{"token_budget: lots\n", 0, false, true},
		{"token_budget: 0\n", 0, false, true},
		{"token_budget: 99999999999\n", 0, false, true},
	} {
		n, ok, err := budget.ParsePolicy([]byte(tc.in))
		if n != tc.n || ok != tc.ok || (err != nil) != tc.fail {
			t.Errorf("ParsePolicy(%q) = %d %v %v", tc.in, n, ok, err)
		}
	}
}
