package blocks

import (
	"bytes"
	"strings"
)

// FrontMatter is a block's Letta-compatible header: "---\n" key: value
// lines "---\n", then the body. Keys keep their order and unknown keys are
// kept, so Format(Parse(x)) == x.
type FrontMatter struct {
	Present bool
	Lines   []string // raw lines between the fences, without newlines
	Body    []byte
	open    []byte // the opening fence line as written ("---\n" or "---\r\n")
	rest    []byte // the closing fence line as written
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
	open := content[:len(content)-len(after)]
	rest := after
	var lines []string
	for len(rest) > 0 {
		line, next, _ := cutLine(rest)
		if strings.TrimRight(string(line), "\r") == "---" {
			fm.Present = true
			fm.open = open
			fm.Lines = lines
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

// Get returns the value of key (trimmed, quotes removed).
func (fm FrontMatter) Get(key string) (string, bool) {
	for _, l := range fm.Lines {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(k) == key && !strings.HasPrefix(l, " ") {
			v = strings.TrimSpace(strings.TrimRight(v, "\r"))
			v = strings.Trim(v, `"'`)
			return v, true
		}
	}
	return "", false
}

// Set replaces key's value, or appends the key.
func (fm *FrontMatter) Set(key, value string) {
	fm.Present = true
	for i, l := range fm.Lines {
		k, _, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(k) == key && !strings.HasPrefix(l, " ") {
			fm.Lines[i] = key + ": " + value
			return
		}
	}
	fm.Lines = append(fm.Lines, key+": "+value)
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

// ReadOnlyFlag reports whether content's front matter says read_only: true.
func ReadOnlyFlag(content []byte) bool {
	v, ok := Parse(content).Get("read_only")
	return ok && strings.EqualFold(v, "true")
}

// readOnlyValue is the raw read_only value ("" when absent), for change
// detection: the agent may not add, remove or change it.
func readOnlyValue(content []byte) string {
	v, ok := Parse(content).Get("read_only")
	if !ok {
		return ""
	}
	return strings.ToLower(v)
}
