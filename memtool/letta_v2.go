package memtool

import (
	"path"
	"regexp"
	"strings"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/letta"
)

// memfs v2 in letta-code's dialect (src/agent/memory-format.ts and
// memory-markdown.ts in letta-code 0.32.18): a root MEMORY.md makes the
// folder v2. Then root .md files are the pinned memory, every memory file's
// front matter is exactly name and description as JSON strings, each
// folder's MEMORY.md is its index (no front matter, never deleted or moved),
// a file may be written only in a folder that has one, and system/ and
// skills/ are not the memory tool's.

// detectV2 is letta-code's detectMemoryFormat for a git-backed memory.
func (t *call) detectV2() bool {
	return blocks.LettaV2(t.exists)
}

// exists reports whether anything stands at rel (never following a link).
func (t *call) exists(rel string) bool {
	_, err := t.wt.Lstat(rel)
	return err == nil
}

// isIndexPath is letta-code's isMemoryIndexPath.
func isIndexPath(rel string) bool {
	return rel == "MEMORY.md" || strings.HasSuffix(rel, "/MEMORY.md")
}

// allowed is letta-code's assertMemoryLabelAllowed.
func (l *lettaRun) allowed(label string) error {
	if !l.v2 {
		return nil
	}
	if label == "system" || strings.HasPrefix(label, "system/") {
		return lettaErr("%s: core memory uses root Markdown files, not system/", l.prefix)
	}
	if label == "skills" || strings.HasPrefix(label, "skills/") {
		return lettaErr("%s: skills are managed by the skill/file tooling, not the memory tool", l.prefix)
	}
	return nil
}

// assertIndexed is letta-code's assertMemfsV2MemoryPathIndexed: every
// folder above rel has its MEMORY.md (exists says whether one does).
func assertIndexed(rel string, exists func(string) bool) error {
	if rel == "MEMORY.md" {
		return nil
	}
	if !exists("MEMORY.md") {
		return lettaErr("Memory requires a root MEMORY.md index")
	}
	dirs := strings.Split(rel, "/")
	current := ""
	for _, dir := range dirs[:len(dirs)-1] {
		if current == "" {
			current = dir
		} else {
			current += "/" + dir
		}
		if marker := current + "/MEMORY.md"; marker != rel && !exists(marker) {
			return lettaErr("Memory requires %s before writing %s", marker, rel)
		}
	}
	return nil
}

var (
	mdSuffixFold = regexp.MustCompile(`(?i)\.md$`)
	wordBreaks   = regexp.MustCompile(`[-_]+`)
)

// defaultName is letta-code's defaultMemoryName: the file's name without
// .md, its words (split at - and _) capitalised, "Memory" when none.
func defaultName(label string) string {
	file := path.Base(strings.ReplaceAll(label, `\`, "/"))
	var words []string
	for _, w := range wordBreaks.Split(mdSuffixFold.ReplaceAllString(file, ""), -1) {
		if w != "" {
			words = append(words, letta.UpperFirst(w))
		}
	}
	if name := strings.Join(words, " "); name != "" {
		return name
	}
	return "Memory"
}

// v2Value is letta-code's parseV2FrontmatterValue: a JSON string, a
// single-quoted YAML string, or the text as it is.
func v2Value(value string) string {
	v := letta.Trim(value)
	if len(v) >= 1 && v[0] == '"' && v[len(v)-1] == '"' {
		if s, ok := letta.ParseJSONString(v); ok {
			return s
		}
		return jsInner(v)
	}
	if len(v) >= 1 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return strings.ReplaceAll(jsInner(v), "''", "'")
	}
	return v
}

// jsInner is s.slice(1, -1): "" for a string of one character.
func jsInner(s string) string {
	if len(s) < 2 {
		return ""
	}
	return s[1 : len(s)-1]
}

// parseV2 is the memfs v2 half of letta-code's parseMemoryMarkdown, after
// the v1 checks (front matter present, a description): fields are the
// front matter's keys (the last value of each), text its lines.
func (l *lettaRun) parseV2(text string, fields map[string]string, body string) (*lettaFile, error) {
	name, ok := fields["name"]
	if !ok || letta.Trim(name) == "" {
		return nil, lettaErr("%s: target file frontmatter is missing 'name'", l.prefix)
	}
	keys := 0
	for _, line := range splitCRLF(text) {
		if strings.Index(line, ":") > 0 {
			keys++
		}
	}
	if _, hasDesc := fields["description"]; keys != 2 || !hasDesc {
		return nil, lettaErr("%s: memory frontmatter must contain exactly 'name' and 'description'", l.prefix)
	}
	f := &lettaFile{name: v2Value(name), description: v2Value(fields["description"]), body: body}
	if letta.Trim(f.name) == "" || letta.Trim(f.description) == "" {
		return nil, lettaErr("%s: memory 'name' and 'description' must not be empty", l.prefix)
	}
	return f, nil
}

// renderV2 is the memfs v2 half of letta-code's renderMemoryMarkdown: name
// and description as JSON strings, on one line each.
func (l *lettaRun) renderV2(f *lettaFile, desc, body string) (string, error) {
	name := letta.Trim(f.name)
	if name == "" {
		return "", lettaErr("%s: 'name' must not be empty", l.prefix)
	}
	header := "---\nname: " + letta.JSONString(sanitizeDescription(name)) +
		"\ndescription: " + letta.JSONString(desc) + "\n---"
	if body == "" {
		return header + "\n", nil
	}
	return header + "\n" + body, nil
}

// renderIndex is renderMemoryMarkdown for a v2 MEMORY.md: the body alone,
// ending in a newline unless empty.
func renderIndex(body string) string {
	if body == "" || strings.HasSuffix(body, "\n") {
		return body
	}
	return body + "\n"
}
