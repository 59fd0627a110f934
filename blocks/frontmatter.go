package blocks

import (
	"bytes"
	"errors"
	"strings"
)

// FrontMatter is a block's Letta-compatible header: "---\n" key: value
// lines "---\n", then the body. Keys keep their order and unknown keys are
// kept, so Format(Parse(x)) == x.
type FrontMatter struct {
	Present bool
	Lines   []string // raw lines between the fences, without "\n" (a CRLF file's keep "\r")
	Body    []byte
	open    []byte // the opening fence line ("---\n" or "---\r\n")
	rest    []byte // the closing fence line ("---\n", "---\r\n" or "---" at the end)
}

// Parse splits content into front matter and body. Content without a
// leading "---" line has no front matter.
func Parse(content []byte) FrontMatter {
	var fm FrontMatter
	first, after, ok := cutLine(content)
	if !ok || strings.TrimRight(string(first), "\r") != "---" {
		fm.Body = content
		return fm
	}
	rest := after
	var lines []string
	for len(rest) > 0 {
		line, next, _ := cutLine(rest)
		if strings.TrimRight(string(line), "\r") == "---" {
			fm.Present = true
			fm.Lines = lines
			fm.open = content[:len(content)-len(after)]
			fm.rest = rest[:len(rest)-len(next)]
			fm.Body = next
			return fm
		}
		lines = append(lines, string(line))
		rest = next
	}
	// No closing fence: not front matter.
	return FrontMatter{Body: content}
}

func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, len(b) > 0
	}
	return b[:i], b[i+1:], true
}

// Get returns the value of key's first top-level line (trimmed, quotes
// and a trailing " # comment" removed).
func (fm FrontMatter) Get(key string) (string, bool) {
	for _, l := range fm.Lines {
		if k, v, ok := keyValue(l); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// values returns the values of every top-level line of key: a duplicated
// key is read differently by different YAML readers, so checks look at all.
func (fm FrontMatter) values(key string) []string {
	var out []string
	for _, l := range fm.Lines {
		if k, v, ok := keyValue(l); ok && k == key {
			out = append(out, v)
		}
	}
	return out
}

// keyValue splits a top-level "key: value" line. Indented lines belong to
// a nested value and are not keys.
func keyValue(line string) (key, value string, ok bool) {
	if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
		return "", "", false
	}
	k, v, ok := strings.Cut(line, ":")
	if !ok {
		return "", "", false
	}
	v = strings.TrimSpace(strings.TrimRight(v, "\r"))
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return strings.TrimSpace(k), v[1 : len(v)-1], true
	}
	// YAML: "#" after a blank (or first) starts a comment outside quotes.
	for i := 0; i < len(v); i++ {
		if v[i] == '#' && (i == 0 || v[i-1] == ' ' || v[i-1] == '\t') {
			v = strings.TrimSpace(v[:i])
			break
		}
	}
	return strings.TrimSpace(k), strings.Trim(v, `"'`), true
}

// Set replaces key's value, or appends the key. Later duplicates of the
// key are dropped, so that every reader sees the new value.
func (fm *FrontMatter) Set(key, value string) {
	fm.Present = true
	line := key + ": " + value
	if bytes.HasSuffix(fm.open, []byte("\r\n")) {
		line += "\r"
	}
	lines := fm.Lines[:0:0]
	set := false
	for _, l := range fm.Lines {
		if k, _, ok := keyValue(l); ok && k == key {
			if !set {
				lines = append(lines, line)
				set = true
			}
			continue
		}
		lines = append(lines, l)
	}
	if !set {
		lines = append(lines, line)
	}
	fm.Lines = lines
}

// Format writes the block back.
func (fm FrontMatter) Format() []byte {
	if !fm.Present {
		return fm.Body
	}
	var b bytes.Buffer
	if len(fm.open) > 0 {
		b.Write(fm.open)
	} else {
		b.WriteString("---\n")
	}
	for _, l := range fm.Lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if len(fm.rest) > 0 {
		b.Write(fm.rest)
	} else {
		b.WriteString("---\n")
	}
	b.Write(fm.Body)
	return b.Bytes()
}

// KeepFrontMatter is what an operator's block set of content writes over
// head (the block's current version): content as given when it has front
// matter of its own; else head's front matter (description, read_only,
// limit, ...) with all of content as the body, so a plain text file does
// not silently drop them. kept says head's front matter was used.
func KeepFrontMatter(head, content []byte) (out []byte, kept bool) {
	if Parse(content).Present {
		return content, false
	}
	fm := Parse(head)
	if !fm.Present {
		return content, false
	}
	fm.Body = content
	return fm.Format(), true
}

// ReadOnlyFlag reports whether content's front matter says read_only: true
// (on any read_only line, if the key is duplicated).
func ReadOnlyFlag(content []byte) bool {
	for _, v := range Parse(content).values("read_only") {
		if strings.EqualFold(v, "true") {
			return true
		}
	}
	return false
}

// readOnlyValue is the raw read_only value ("" when absent; every value,
// one a line, when duplicated), for change detection: the agent may not
// add, remove or change it.
func readOnlyValue(content []byte) string {
	return strings.ToLower(strings.Join(Parse(content).values("read_only"), "\n"))
}

// ErrFrontMatterBroken is returned for a write that leaves a file's front
// matter unparseable where the version before parsed (SPEC §8): the keys
// in it (limit, read_only, description) would silently stop applying.
var ErrFrontMatterBroken = errors.New("the write breaks the file's front matter")

// FrontMatterParses reports whether content has front matter that parses:
// an opening and a closing "---" line, and between them only key: value
// lines, their indented (or "- " list) continuations, comments and blank
// lines.
func FrontMatterParses(content []byte) bool {
	fm := Parse(content)
	if !fm.Present {
		return false
	}
	for _, l := range fm.Lines {
		t := strings.TrimRight(l, "\r")
		switch {
		case strings.TrimSpace(t) == "", strings.HasPrefix(t, "#"),
			strings.HasPrefix(t, " "), strings.HasPrefix(t, "\t"), strings.HasPrefix(t, "- "):
			continue
		}
		k, _, ok := keyValue(t)
		if !ok || k == "" || strings.ContainsAny(k, " \t\"'") {
			return false
		}
	}
	return true
}

// CheckFrontMatter refuses replacing old with new (nil: absent; a deletion
// is never refused) when old's front matter parses and new's does not.
func CheckFrontMatter(old, new []byte) error {
	if old == nil || new == nil || !FrontMatterParses(old) || FrontMatterParses(new) {
		return nil
	}
	return ErrFrontMatterBroken
}
