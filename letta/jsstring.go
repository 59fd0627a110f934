package letta

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// letta-code is JavaScript: its lengths and slices count UTF-16 code units,
// its trim() knows its own whitespace, and it reads files as WHATWG UTF-8.
// These helpers do the same on Go strings, so budgets cut where its do.

// u16len is a string's JavaScript length.
func u16len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// u16slice is s.slice(0, n) in JavaScript. A cut inside a surrogate pair
// leaves a lone surrogate there, which Node writes out as U+FFFD.
func u16slice(s string, n int) string {
	if n <= 0 {
		return ""
	}
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			if units < n { // half a pair
				return s[:i] + "\uFFFD"
			}
			return s[:i]
		}
		units += w
	}
	return s
}

// jsSpace reports whether JavaScript's trim() removes r (WhiteSpace and
// LineTerminator: unlike Go's unicode.IsSpace it has U+FEFF, not U+0085).
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func jsTrim(s string) string      { return strings.TrimFunc(s, jsSpace) }
func jsTrimEnd(s string) string   { return strings.TrimRightFunc(s, jsSpace) }
func jsTrimStart(s string) string { return strings.TrimLeftFunc(s, jsSpace) }

// localeInt is n.toLocaleString() under an English locale: 12,345.
func localeInt(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// DecodeUTF8 is Node's readFile(path, "utf-8"): WHATWG decoding, each
// maximal invalid subpart one U+FFFD (Go's conversions give one per byte),
// a byte order mark kept.
func DecodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			out.WriteByte(c)
			i++
			continue
		}
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c == 0xED:
			need, hi = 2, 0x9F
		case c >= 0xE1 && c <= 0xEF:
			need = 2
		case c == 0xF0:
			need, lo = 3, 0x90
		case c == 0xF4:
			need, hi = 3, 0x8F
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		default: // a continuation byte or a byte never in UTF-8
			out.WriteRune(utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		for k := 0; k < need; k++ {
			if j >= len(b) || b[j] < lo || b[j] > hi {
				break
			}
			lo, hi = 0x80, 0xBF
			j++
		}
		if j-i == need+1 {
			out.Write(b[i:j])
		} else {
			out.WriteRune(utf8.RuneError)
		}
		i = j
	}
	return out.String()
}
