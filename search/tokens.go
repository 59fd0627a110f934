package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTokenLen is the longest token kept; longer runs (hashes, base64) are
// cut so one file cannot grow the dictionary without bound.
const maxTokenLen = 64

// stopwords are English words too common to tell documents apart; leaving
// them out keeps the postings (and the memory per agent) small.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true,
	"be": true, "by": true, "for": true, "from": true, "if": true, "in": true,
	"into": true, "is": true, "it": true, "its": true, "of": true, "on": true,
	"or": true, "that": true, "the": true, "this": true, "to": true, "was": true,
	"with": true, "which": true, "will": true, "can": true, "not": true,
}

// Tokens splits text into the terms the index and queries share: lowercase
// words of letters and digits; a word joined by '.', '_' or '-' (a version
// string, an identifier) is also kept whole, and a camelCase word also
// yields its parts. Plurals are folded ("files" → "file"). Invalid UTF-8
// bytes separate words.
func Tokens(text string) []string {
	var out []string
	emit := func(t string) {
		if t == "" || stopwords[t] {
			return
		}
		if len(t) > maxTokenLen {
			t = t[:maxTokenLen]
			for !utf8.ValidString(t) {
				t = t[:len(t)-1]
			}
		}
		out = append(out, fold(t))
	}
	for _, word := range strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-') || r == utf8.RuneError
	}) {
		word = strings.Trim(word, "._-")
		if word == "" {
			continue
		}
		parts := strings.FieldsFunc(word, func(r rune) bool { return r == '.' || r == '_' || r == '-' })
		if len(parts) > 1 {
			emit(strings.ToLower(word))
		}
		for _, p := range parts {
			sub := camelParts(p)
			if len(sub) > 1 {
				emit(strings.ToLower(p))
			}
			for _, s := range sub {
				emit(strings.ToLower(s))
			}
		}
	}
	return out
}

// camelParts splits "ReadFileHTTP2" into "Read", "File", "HTTP2"; a word
// in one case is one part.
func camelParts(w string) []string {
	rs := []rune(w)
	var parts []string
	start := 0
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		boundary := unicode.IsLower(prev) && unicode.IsUpper(cur) ||
			unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if boundary {
			parts = append(parts, string(rs[start:i]))
			start = i
		}
	}
	return append(parts, string(rs[start:]))
}

// fold strips a plural ending from a word of letters: "ies" → "y", "s"
// (not "ss", "us", "is") → "".
func fold(t string) string {
	if len(t) <= 3 || !isLetters(t) {
		return t
	}
	switch {
	case strings.HasSuffix(t, "ies") && len(t) > 4:
		return t[:len(t)-3] + "y"
	case strings.HasSuffix(t, "s") && !strings.HasSuffix(t, "ss") && !strings.HasSuffix(t, "us") && !strings.HasSuffix(t, "is"):
		return t[:len(t)-1]
	}
	return t
}

func isLetters(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
