package letta

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JavaScript's string functions that letta-code's memory tool writes files
// with (src/agent/memory-markdown.ts), for memfsd's letta-code dialect.

// Trim is JavaScript's String.prototype.trim.
func Trim(s string) string { return jsTrim(s) }

// JSONString is JSON.stringify of a string: only '"', '\\' and the control
// characters escaped (U+2028, '<', '&' and the rest written as they are,
// unlike Go's encoding/json).
func JSONString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteString(strconv.FormatInt(int64(r)>>4, 16))
				b.WriteString(strconv.FormatInt(int64(r)&0xf, 16))
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ParseJSONString is JSON.parse of text that is a JSON string; false when
// it is not one. (A lone surrogate escape, which JavaScript keeps, comes
// out as U+FFFD: Go strings are UTF-8.)
func ParseJSONString(text string) (string, bool) {
	if !strings.HasPrefix(text, `"`) || !utf8.ValidString(text) {
		return "", false
	}
	var s string
	if json.Unmarshal([]byte(text), &s) != nil {
		return "", false
	}
	return s, true
}

// UpperFirst is `${word[0]?.toUpperCase() ?? ""}${word.slice(1)}`: the
// first UTF-16 unit upper-cased by JavaScript's full mapping (ß becomes
// SS); a character outside the BMP (half a pair there) stays as it is.
func UpperFirst(word string) string {
	r, n := utf8.DecodeRuneInString(word)
	if n == 0 || r >= 0x10000 {
		return word
	}
	if u, ok := upperJS[uint16(r)]; ok {
		return u + word[n:]
	}
	return word
}
