package letta

import (
	"strings"
	"unicode"
)

// letta-code sorts names with String.prototype.localeCompare: ICU's root
// collation (CLDR, punctuation not ignored) at tertiary strength, which an
// English locale does not tailor. compare emulates it, exactly for names made
// of ASCII and of Latin letters that are an ASCII letter with accents
// (é, Å, ñ, ő, ẫ, ...): punctuation and symbols before digits before letters,
// then accents (secondary), then case (tertiary, lower first). Other letters
// (æ, ß, ø, Greek, CJK, ...) sort after the Latin ones by code point, other
// symbols between "~" and "$" by code point: ICU's own order among those is
// not reproduced. testdata/letta/collation.golden (Node's sort) checks it.

// asciiOrder is ICU's primary order of ASCII punctuation, symbols and digits
// (letters follow, a to z, case at the tertiary level).
const asciiOrder = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789"

// Primary weights: ASCII up to "~" by asciiOrder; then the other symbols by
// code point; then "$" and the digits (asciiOrder, raised by primaryHigh);
// then a to z; then the other letters by lower-case code point.
const (
	primarySymbols = 0x80                 // + code point, above every asciiOrder index
	primaryHigh    = 1 << 24              // above every symbol's weight
	primaryLetters = primaryHigh + 0x100  // a: +0 ... z: +25
	primaryOther   = primaryHigh + 0x1000 // + lower-case code point
)

// element is one collation element: primary, secondary, tertiary weights.
type element struct {
	p uint32
	s uint16
	t uint8
}

var asciiPrimary = func() [128]uint32 {
	var w [128]uint32
	for i := 0; i < len(asciiOrder); i++ {
		w[asciiOrder[i]] = uint32(i + 1)
	}
	return w
}()

// elements appends the collation elements of s.
func elements(s string, out []element) []element {
	for _, r := range s {
		if d, ok := decompositions[r]; ok {
			out = elements(d, out)
			continue
		}
		switch {
		case r >= 'a' && r <= 'z':
			out = append(out, element{primaryLetters + uint32(r-'a'), 1, 1})
		case r >= 'A' && r <= 'Z':
			out = append(out, element{primaryLetters + uint32(r-'A'), 1, 2})
		case r < 0x80:
			if w := asciiPrimary[r]; w != 0 {
				if w > asciiPrimary['~'] { // "$" and the digits
					w += primaryHigh
				}
				out = append(out, element{w, 1, 1})
			} // other control characters are ignorable
		case markWeights[r] != 0:
			out = append(out, element{0, markWeights[r], 1})
		case unicode.IsLetter(r):
			t := uint8(1)
			if unicode.IsUpper(r) {
				t = 2
			}
			out = append(out, element{primaryOther + uint32(unicode.ToLower(r)), 1, t})
		default:
			out = append(out, element{primarySymbols + uint32(r), 1, 1})
		}
	}
	return out
}

// compare is a.localeCompare(b) as letta-code runs it: -1, 0 or 1. Names
// equal at all three levels are told apart by their bytes, so the order is
// total (ICU would call them equal and a stable sort keep their order).
func compare(a, b string) int {
	if a == b {
		return 0
	}
	ea, eb := elements(a, nil), elements(b, nil)
	for level := 0; level < 3; level++ {
		if c := compareLevel(ea, eb, level); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

// compareLevel compares the non-zero weights of one level in order.
func compareLevel(a, b []element, level int) int {
	weight := func(e element) uint32 {
		switch level {
		case 0:
			return e.p
		case 1:
			return uint32(e.s)
		}
		return uint32(e.t)
	}
	i, j := 0, 0
	for {
		for i < len(a) && weight(a[i]) == 0 {
			i++
		}
		for j < len(b) && weight(b[j]) == 0 {
			j++
		}
		switch {
		case i == len(a) && j == len(b):
			return 0
		case i == len(a):
			return -1
		case j == len(b):
			return 1
		}
		if wa, wb := weight(a[i]), weight(b[j]); wa != wb {
			if wa < wb {
				return -1
			}
			return 1
		}
		i++
		j++
	}
}
