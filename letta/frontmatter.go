package letta

import (
	"regexp"
	"strings"
)

// frontMatter is letta-code's parseFrontmatter (src/utils/frontmatter.ts)
// as its renderers use it: keys to a string or (for "key:" followed by
// "  - item" lines) a list, and the body after the closing "---", trimmed.
// It is not YAML, and memfsd's blocks package is not this: descriptions must
// come out exactly as letta-code reads them, block scalars and lists included.
type frontMatter struct {
	strs  map[string]string
	lists map[string][]string
	body  string
}

// description is the front matter's description when it is a string.
func (f frontMatter) description() (string, bool) {
	d, ok := f.strs["description"]
	return d, ok
}

var blockScalar = regexp.MustCompile(`^([|>])([+-]?)$`)

// parseFrontMatter follows parseFrontmatter line for line.
func parseFrontMatter(content string) frontMatter {
	n := strings.TrimPrefix(content, "\uFEFF")
	n = strings.ReplaceAll(n, "\r\n", "\n")
	n = strings.ReplaceAll(n, "\r", "\n")
	fm := frontMatter{strs: map[string]string{}, lists: map[string][]string{}}
	// /^---\n([\s\S]*?)\n---(?:\n([\s\S]*))?$/: the first "\n---" after the
	// opening line that ends the text or its line.
	if !strings.HasPrefix(n, "---\n") {
		fm.body = n
		return fm
	}
	end := -1
	for k := 4; k < len(n); k++ {
		if strings.HasPrefix(n[k:], "\n---") && (k+4 == len(n) || n[k+4] == '\n') {
			end = k
			break
		}
	}
	if end < 0 {
		fm.body = n
		return fm
	}
	text := n[4:end]
	body := ""
	if end+4 < len(n) {
		body = n[end+5:]
	}
	set := func(key, v string) { fm.strs[key] = v; delete(fm.lists, key) }
	setList := func(key string, v []string) { fm.lists[key] = v; delete(fm.strs, key) }
	lines := strings.Split(text, "\n")
	currentKey := ""
	var currentArray []string
	savePending := func() {
		if currentKey == "" {
			return
		}
		if len(currentArray) > 0 {
			setList(currentKey, currentArray)
		} else {
			set(currentKey, "")
		}
		currentKey, currentArray = "", nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := jsTrim(line)
		indent := u16len(line) - u16len(jsTrimStart(line))
		if indent > 0 {
			if indent <= 2 && strings.HasPrefix(trimmed, "-") && currentKey != "" {
				currentArray = append(currentArray, jsTrim(trimmed[1:]))
			}
			continue
		}
		savePending()
		colon := strings.Index(line, ":")
		if colon <= 0 {
			continue
		}
		key := jsTrim(line[:colon])
		value := jsTrim(line[colon+1:])
		if m := blockScalar.FindStringSubmatch(value); m != nil {
			var block []string
			j := i + 1
			for ; j < len(lines); j++ {
				l := lines[j]
				if jsTrim(l) != "" && l == jsTrimStart(l) {
					break
				}
				block = append(block, l)
			}
			set(key, parseBlockScalar(block, m[1], m[2]))
			i = j - 1
			continue
		}
		if value != "" {
			set(key, value)
		} else {
			currentKey, currentArray = key, nil
		}
	}
	savePending()
	fm.body = jsTrim(body)
	return fm
}

// parseBlockScalar is letta-code's reading of a "|" or ">" value.
func parseBlockScalar(lines []string, style, chomping string) string {
	indent := -1
	for _, l := range lines {
		if jsTrim(l) == "" {
			continue
		}
		if d := len([]rune(l)) - len([]rune(jsTrimStart(l))); indent < 0 || d < indent {
			indent = d
		}
	}
	de := make([]string, len(lines))
	for i, l := range lines {
		if jsTrim(l) != "" && indent >= 0 {
			de[i] = string([]rune(l)[indent:])
		}
	}
	var value string
	if style == "|" {
		value = strings.Join(de, "\n")
	} else {
		breaks := 0
		for _, l := range de {
			if l == "" {
				breaks++
				continue
			}
			if value != "" {
				if breaks > 0 {
					value += strings.Repeat("\n", breaks)
				} else {
					value += " "
				}
			} else if breaks > 0 {
				value += strings.Repeat("\n", breaks)
			}
			value += l
			breaks = 0
		}
		value += strings.Repeat("\n", breaks)
	}
	if chomping == "+" {
		return value + "\n"
	}
	stripped := strings.TrimRight(value, "\n")
	if chomping == "-" {
		return stripped
	}
	return stripped + "\n"
}
