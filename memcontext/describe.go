package memcontext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memfsd/memfsd/blocks"
)

// describe is a file's description: its front matter's, else its first
// non-empty line (cut at 120 characters).
// A binary file (see isBinary) is "(binary, N bytes)": its bytes never
// reach the prompt.
func describe(data []byte) string {
	if isBinary(data) {
		return binaryLine(data)
	}
	fm := blocks.Parse(data)
	if d, ok := fm.Get("description"); ok && d != "" {
		return oneLine(d)
	}
	for _, l := range strings.Split(string(fm.Body), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > 120 {
				l = string(r[:120]) + "…"
			}
			return oneLine(l)
		}
	}
	return ""
}

// binarySniff is how much of a file isBinary looks at, as git's
// buffer_is_binary does (first 8000 bytes).
const binarySniff = 8000

// isBinary reports bytes that are not text to show in a prompt: a NUL in
// the first 8000 bytes (git's rule), bytes there that are not UTF-8, or a
// control character other than tab, newline, carriage return and form
// feed.
func isBinary(data []byte) bool {
	head := data
	if len(head) > binarySniff {
		head = head[:binarySniff]
		// A UTF-8 sequence cut at the edge is not a fault of the file.
		for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.RuneStart(data[len(head)]); i++ {
			head = head[:len(head)-1]
		}
	}
	if !utf8.Valid(head) {
		return true
	}
	for _, r := range string(head) {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f' || r == 0x7f {
			return true
		}
	}
	return false
}

// binaryLine is what the context shows for a binary file.
func binaryLine(data []byte) string { return fmt.Sprintf("(binary, %d bytes)", len(data)) }

// oneLine is s with every control character (a newline, an escape) as a
// space: a description or a name never breaks the context's lines.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
