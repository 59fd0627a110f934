package main

import "testing"

// TestUnescapeHTML: only the three HTML escapes go; an escaped backslash
// followed by the text u003c stays as it is, and the answer is the same JSON.
func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"x \u003cb\u003E \u0026 c"}`: `{"a":"x <b> & c"}`,
		`{"a":"\\u003c"}`:                  `{"a":"\\u003c"}`,
		`{"a":"\\\u003c"}`:                 `{"a":"\\<"}`,
		`{"a":"\u00e9 \"\u0026\""}`:        `{"a":"\u00e9 \"&\""}`,
		`{"a":"end\\"}`:                    `{"a":"end\\"}`,
	} {
		if got := string(unescapeHTML([]byte(in))); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
	}
}
