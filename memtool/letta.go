package memtool

import (
	"encoding/json"
	"errors"
	"math"
	"path"
	"regexp"
	"strings"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/letta"
)

// letta-code's dialect: its memory tool (src/tools/impl/memory.ts in
// letta-code 0.32.18) and memory_apply_patch (memory-apply-patch.ts), over
// the same folder, checks and commit as Anthropic's. Their argument names,
// validation, order of checks and answers are letta-code's, because the
// model is trained on them; where memfsd refuses more (links, .git, the
// secret guard, read-only blocks by path), its own words are used.
//
// A letta-code path is a memory label: "memory/" and ".md" are cut off and
// ".md" put back, so file_path "notes/todo" and "notes/todo.md" are both
// the file notes/todo.md.

// lettaRun is one call in letta-code's dialect.
type lettaRun struct {
	args   LettaArgs
	prefix string // "memory" or "memory_apply_patch": the start of its errors
	v2     bool   // the folder is memfs v2 (a root MEMORY.md), as the call began
}

// RunCall executes one call of either dialect. A failed call changes
// nothing.
func (t *Tool) RunCall(c Call) Result {
	if c.Dialect != LettaCode {
		return t.Run(c.Input)
	}
	l := &lettaRun{args: c.Letta, prefix: c.Letta.Tool}
	return t.do(func(cl *call) (string, error) {
		cl.letta = l
		l.v2 = cl.detectV2()
		if l.args.Tool == LettaApplyPatch {
			return cl.lettaPatch()
		}
		return cl.lettaMemory()
	})
}

func lettaErr(format string, args ...any) error { return toolErr(format, args...) }

func (l *lettaRun) raw(key string) (json.RawMessage, bool) {
	for _, f := range l.args.fields {
		if f.key == key {
			return f.raw, true
		}
	}
	return nil, false
}

// str is the field key when it is a JSON string.
func (l *lettaRun) str(key string) (string, bool) {
	raw, ok := l.raw(key)
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// required is letta-code's validateRequiredParams: the keys must be
// present (whatever their value).
func (l *lettaRun) required(keys ...string) error {
	var missing []string
	for _, k := range keys {
		if _, ok := l.raw(k); !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	received := make([]string, 0, len(l.args.fields))
	for _, f := range l.args.fields {
		received = append(received, f.key)
	}
	s := ""
	if len(missing) > 1 {
		s = "s"
	}
	return lettaErr("%s tool missing required parameter%s: %s. Received parameters: %s", l.prefix, s, strings.Join(missing, ", "), strings.Join(received, ", "))
}

// reason is the required, non-empty reason.
func (l *lettaRun) reason() (string, error) {
	r, _ := l.str("reason")
	r = strings.TrimSpace(r)
	if r == "" {
		// letta-code throws a TypeError for a reason that is not a
		// string; memfsd answers as for an empty one.
		return "", lettaErr("%s: 'reason' must be a non-empty string", l.prefix)
	}
	return r, nil
}

// requireString is letta-code's requireString: a string with something
// besides whitespace.
func (l *lettaRun) requireString(key, command string) (string, error) {
	s, ok := l.str(key)
	if !ok || strings.TrimSpace(s) == "" {
		return "", lettaErr("memory %s: '%s' must be a non-empty string", command, key)
	}
	return s, nil
}

// label is letta-code's normalizeMemoryLabel: a path relative to the
// memory folder, or absolute under it, to a label (no "memory/" prefix, no
// ".md"). memfsd also takes an absolute path under /memories.
func (t *call) label(raw, fieldName string) (string, error) {
	p := t.letta.prefix
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", lettaErr("%s: '%s' must be a non-empty string", p, fieldName)
	}
	if strings.HasPrefix(s, "~/") || strings.HasPrefix(s, "$HOME/") {
		return "", lettaErr("%s: '%s' must be a memory-relative file path, not a home-relative filesystem path", p, fieldName)
	}
	if strings.HasPrefix(s, "/") || windowsAbs.MatchString(s) {
		abs := path.Clean(s)
		for _, root := range append(t.rootNames(), Root) {
			if rel, ok := strings.CutPrefix(abs, root+"/"); ok && root != "/" {
				return t.relativeLabel(rel, fieldName)
			}
		}
		return "", lettaErr("The %s tool can only be used to modify files in {%s} or provided as a relative path", p, t.wt.Path())
	}
	return t.relativeLabel(s, fieldName)
}

var windowsAbs = regexp.MustCompile(`^[a-zA-Z]:[\\/]`)

// relativeLabel is letta-code's normalizeRelativeMemoryLabel.
func (t *call) relativeLabel(raw, fieldName string) (string, error) {
	p := t.letta.prefix
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", lettaErr("%s: '%s' must be a non-empty string", p, fieldName)
	}
	s = strings.ReplaceAll(s, `\`, "/")
	if strings.HasPrefix(s, "/") {
		return "", lettaErr("%s: '%s' must be a relative path like system/contacts.md", p, fieldName)
	}
	s = strings.TrimPrefix(s, "memory/")
	s = strings.TrimSuffix(s, ".md")
	var segments []string
	for _, seg := range strings.Split(s, "/") {
		if seg != "" {
			segments = append(segments, seg)
		}
	}
	if len(segments) == 0 {
		return "", lettaErr("%s: '%s' resolves to an empty memory label", p, fieldName)
	}
	for _, seg := range segments {
		if seg == "." || seg == ".." {
			return "", lettaErr("%s: '%s' contains invalid path traversal segment", p, fieldName)
		}
		if strings.ContainsRune(seg, 0) {
			return "", lettaErr("%s: '%s' contains invalid null bytes", p, fieldName)
		}
	}
	return strings.Join(segments, "/"), nil
}

// place resolves a path relative to the memory folder by memfsd's own
// rules (.git, links): rel itself and src, what
// a read of it reads.
func (t *call) place(rel string) (string, string, error) {
	return t.resolve(Root + "/" + rel)
}

// lettaFile is a memory file as letta-code parses it (memory-markdown.ts):
// front matter, then the body.
type lettaFile struct {
	lines       []string // the front matter's lines (v1)
	name        string   // v2
	description string
	readOnly    string // v1
	body        string
}

var lettaFrontMatter = regexp.MustCompile(`^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$`)

var frontMatterOpen = regexp.MustCompile(`^---\r?\n`)

// parse is letta-code's parseMemoryMarkdown of content, the file at rel,
// in the folder's layout.
func (l *lettaRun) parse(content, rel string) (*lettaFile, error) {
	if l.v2 && isIndexPath(rel) {
		if frontMatterOpen.MatchString(content) {
			return nil, lettaErr("%s: MEMORY.md must not have frontmatter", l.prefix)
		}
		return &lettaFile{body: content}, nil
	}
	m := lettaFrontMatter.FindStringSubmatch(content)
	if m == nil {
		return nil, lettaErr("%s: target file is missing required frontmatter", l.prefix)
	}
	f := &lettaFile{lines: splitCRLF(m[1]), body: m[2]}
	fields := map[string]string{} // parseScalarFrontmatter: the last value wins
	for _, line := range f.lines {
		if k, v, ok := lettaKeyValue(line); ok {
			fields[k] = v
		}
	}
	desc, hasDesc := fields["description"]
	if !hasDesc || letta.Trim(desc) == "" {
		return nil, lettaErr("%s: target file frontmatter is missing 'description'", l.prefix)
	}
	if l.v2 {
		return l.parseV2(m[1], fields, m[2])
	}
	f.description, f.readOnly = desc, fields["read_only"]
	return f, nil
}

// lettaKeyValue is a front-matter line as letta-code's
// parseScalarFrontmatter reads it: the key before the first colon.
func lettaKeyValue(line string) (key, value string, ok bool) {
	i := strings.Index(line, ":")
	if i <= 0 {
		return "", "", false
	}
	return letta.Trim(line[:i]), letta.Trim(line[i+1:]), true
}

func splitCRLF(s string) []string { return strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") }

// render is letta-code's renderMemoryMarkdown of the file at rel, in the
// folder's layout. In v1: "---", the description (one line), read_only
// when there, "---", the body. Unlike letta-code, which keeps only those
// two keys, any other line of a v1 front matter (limit, ...) is kept where
// it was: an operator's limit is not the agent's to drop.
func (l *lettaRun) render(f *lettaFile, body, rel string) (string, error) {
	if l.v2 && isIndexPath(rel) {
		return renderIndex(body), nil
	}
	desc := sanitizeDescription(f.description)
	if desc == "" {
		return "", lettaErr("%s: 'description' must not be empty", l.prefix)
	}
	if l.v2 {
		return l.renderV2(f, desc, body)
	}
	lines := []string{"---"}
	wroteDesc := false
	for _, line := range f.lines {
		k, v, ok := lettaKeyValue(line)
		switch {
		case ok && k == "description":
			if !wroteDesc {
				lines = append(lines, "description: "+desc)
				wroteDesc = true
			}
		case ok && k == "read_only":
			lines = append(lines, "read_only: "+v)
		case ok || strings.TrimSpace(line) != "":
			lines = append(lines, line)
		}
	}
	if !wroteDesc {
		lines = append(lines[:1], append([]string{"description: " + desc}, lines[1:]...)...)
	}
	lines = append(lines, "---")
	header := strings.Join(lines, "\n")
	if body == "" {
		return header + "\n", nil
	}
	return header + "\n" + body, nil
}

// sanitizeDescription is letta-code's sanitizeFrontmatterValue: one line,
// trimmed.
func sanitizeDescription(s string) string {
	return letta.Trim(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", " "), "\n", " "))
}

// readOnlyErr is letta-code's answer to a read-only file.
func (l *lettaRun) readOnlyErr(shown string) error {
	return lettaErr("%s: %s is read_only and cannot be modified", l.prefix, shown)
}

// refused words a refusal of blocks.CheckAgentWrite at shown in
// letta-code's way; new is what the write would have put there.
func (l *lettaRun) refused(shown string, err error, new []byte) error {
	if errors.Is(err, blocks.ErrReadOnlyKey) {
		if new != nil && blocks.ReadOnlyFlag(new) {
			return lettaErr("%s: %s cannot be written with read_only=true", l.prefix, shown)
		}
		return lettaErr("%s: %s: the read_only key in front matter can only be changed by the operator", l.prefix, shown)
	}
	return l.readOnlyErr(shown)
}

// readText reads the file src for letta-code's dialect; a failure is
// worded as letta-code's "failed to read" with Node's message for a
// missing file or a folder.
func (t *call) readText(rel, src, shown string) (string, error) {
	st, err := t.lstat(src)
	if err != nil {
		if isLinkRefusal(err) {
			return "", errViaSymlink
		}
		return "", lettaErr("%s: failed to read %s: ENOENT: no such file or directory, open '%s'", t.letta.prefix, shown, path.Join(t.wt.Path(), rel))
	}
	if isLink(st) {
		return "", errViaSymlink // a link now, where resolve saw none
	}
	if isDir(st) {
		return "", lettaErr("%s: failed to read %s: EISDIR: illegal operation on a directory, read", t.letta.prefix, shown)
	}
	if !isRegular(st) {
		return "", lettaErr("%s: failed to read %s: not a regular file", t.letta.prefix, shown)
	}
	f, err := t.wt.Read(src)
	if err != nil || f == nil {
		return "", lettaErr("%s: failed to read %s: ENOENT: no such file or directory, open '%s'", t.letta.prefix, shown, path.Join(t.wt.Path(), rel))
	}
	return string(f.Data), nil
}

// loadEditable is letta-code's loadEditableMemoryFile: read (with read,
// t.readText or t.readTextStrict), parse, refuse a read-only file.
func (t *call) loadEditable(rel, src, shown string, read func(rel, src, shown string) (string, error)) (string, *lettaFile, error) {
	content, err := read(rel, src, shown)
	if err != nil {
		return "", nil, err
	}
	f, err := t.checkEditable(rel, shown, content)
	return content, f, err
}

// checkEditable parses content, the memory file at rel, and refuses it
// when it is read-only. memfsd's read-only blocks (by path) are refused
// before the front matter is looked at, and read_only: true counts in any
// letter case (letta-code: exactly "true").
func (t *call) checkEditable(rel, shown, content string) (*lettaFile, error) {
	if blocks.IsReadOnlyPath(rel) {
		return nil, t.letta.readOnlyErr(shown)
	}
	f, err := t.letta.parse(content, rel)
	if err != nil {
		return nil, err
	}
	if f.readOnly == "true" || blocks.IsReadOnly(rel, []byte(content)) {
		return nil, t.letta.readOnlyErr(shown)
	}
	return f, nil
}

// commitLetta applies the changes as one commit whose subject is memfsd's
// (so git log tells memory commits apart) and whose body is the reason,
// and answers as letta-code does.
func (t *call) commitLetta(changes []change, subject, reason, done string) (string, error) {
	if len(changes) == 0 {
		if t.letta.args.Tool == LettaApplyPatch {
			return "", lettaErr("memory_apply_patch made no changes: the patch produced no changed paths. Verify the patch targets the intended file(s) and actually modifies content.")
		}
		return "", lettaErr("Memory %s made no changes: it produced no changed paths. Verify the command targets the intended file(s) and actually modifies content.", done)
	}
	noChange := lettaErr("Memory %s made no effective changes; nothing was committed. The resulting content matched what was already on disk.", done)
	if t.letta.args.Tool == LettaApplyPatch {
		noChange = lettaErr("memory_apply_patch made no effective changes; nothing was committed. The patched content matched what was already on disk.")
	}
	same := true
	for _, c := range changes {
		if (c.old == nil) != (c.new == nil) || string(c.old) != string(c.new) {
			same = false
		}
	}
	if same {
		return "", noChange
	}
	for _, c := range changes {
		if err := t.checkWrite(c.rel, c.rel, c.old, c.new); err != nil {
			return "", err
		}
	}
	id, err := t.apply(changes, subject+"\n\n"+reason)
	if err != nil {
		return "", err
	}
	if t.afterApply != nil {
		t.afterApply()
	}
	short := "unknown"
	switch {
	case len(id) >= 7:
		short = id[:7]
	case t.Commit != nil:
		return "", noChange
	}
	if t.letta.args.Tool == LettaApplyPatch {
		return "memory_apply_patch committed (" + short + "); harness will sync after the turn.", nil
	}
	return "Memory " + done + " committed (" + short + "); harness will sync after the turn.", nil
}

// lettaMemory runs letta-code's memory tool.
func (t *call) lettaMemory() (string, error) {
	l := t.letta
	if err := l.required("command", "reason"); err != nil {
		return "", err
	}
	reason, err := l.reason()
	if err != nil {
		return "", err
	}
	command, _ := l.str("command")
	if !isJSONString(l, "command") {
		raw, _ := l.raw("command")
		command = string(raw)
	}
	var changes []change
	var subject string
	switch command {
	case "create":
		changes, subject, err = t.lettaCreate()
	case "str_replace":
		changes, subject, err = t.lettaStrReplace()
	case "insert":
		changes, subject, err = t.lettaInsert()
	case "delete":
		changes, subject, err = t.lettaDelete()
	case "rename":
		changes, subject, err = t.lettaRename()
	case "update_description":
		changes, subject, err = t.lettaUpdateDescription()
	default:
		return "", lettaErr("Unsupported memory command: %s", command)
	}
	if err != nil {
		return "", err
	}
	return t.commitLetta(changes, subject, reason, command)
}

func isJSONString(l *lettaRun, key string) bool {
	_, ok := l.str(key)
	return ok
}

func (t *call) lettaCreate() ([]change, string, error) {
	l := t.letta
	pathArg, err := l.requireString("file_path", "create")
	if err != nil {
		return nil, "", err
	}
	label, err := t.label(pathArg, "file_path")
	if err != nil {
		return nil, "", err
	}
	if err := l.allowed(label); err != nil {
		return nil, "", err
	}
	rel, _, err := t.place(label + ".md")
	if err != nil {
		return nil, "", err
	}
	// A v2 folder's index has no front matter, so no description.
	description := ""
	if !l.v2 || !isIndexPath(rel) {
		if description, err = l.requireString("description", "create"); err != nil {
			return nil, "", err
		}
	}
	if l.v2 {
		if err := assertIndexed(rel, t.exists); err != nil {
			return nil, "", err
		}
	}
	body := ""
	if raw, ok := l.raw("file_text"); ok && string(raw) != "null" {
		if body, ok = l.str("file_text"); !ok {
			return nil, "", lettaErr("memory create: 'file_text' must be a string")
		}
	}
	f := &lettaFile{description: description, lines: []string{"description: " + description}}
	if l.v2 {
		f = &lettaFile{name: defaultName(rel), description: description}
	}
	rendered, err := l.render(f, body, rel)
	if err != nil {
		return nil, "", err
	}
	if _, err := t.wt.Lstat(rel); err == nil {
		return nil, "", lettaErr("memory create: block already exists at %s", pathArg)
	}
	if err := t.checkParents(rel); err != nil {
		return nil, "", err
	}
	return []change{{rel: rel, new: []byte(rendered)}}, "memory: create " + rel, nil
}

// editableAt resolves pathArg to the memory file to edit and loads it;
// before is what stands there, for the change and its undo.
func (t *call) editableAt(pathArg, command string) (rel, shown, content string, f *lettaFile, before change, err error) {
	label, err := t.label(pathArg, "file_path")
	if err != nil {
		return
	}
	if err = t.letta.allowed(label); err != nil {
		return
	}
	rel, src, err := t.place(label + ".md")
	if err != nil {
		return
	}
	content, f, err = t.loadEditable(rel, src, pathArg, t.readText)
	if err != nil {
		return
	}
	cur, err := t.standing(rel)
	if err != nil {
		return
	}
	return rel, pathArg, content, f, change{rel: rel, old: cur.Data, oldMode: cur.Mode}, nil
}

func (t *call) lettaStrReplace() ([]change, string, error) {
	l := t.letta
	pathArg, err := l.requireString("file_path", "str_replace")
	if err != nil {
		return nil, "", err
	}
	oldString, err := l.requireString("old_string", "str_replace")
	if err != nil {
		return nil, "", err
	}
	newString, err := l.requireString("new_string", "str_replace")
	if err != nil {
		return nil, "", err
	}
	rel, _, _, f, c, err := t.editableAt(pathArg, "str_replace")
	if err != nil {
		return nil, "", err
	}
	idx := strings.Index(f.body, oldString)
	if idx < 0 {
		return nil, "", lettaErr("memory str_replace: old_string was not found in the target memory block")
	}
	rendered, err := l.render(f, f.body[:idx]+newString+f.body[idx+len(oldString):], rel)
	if err != nil {
		return nil, "", err
	}
	c.new = []byte(rendered)
	return []change{c}, "memory: str_replace " + rel, nil
}

func (t *call) lettaInsert() ([]change, string, error) {
	l := t.letta
	pathArg, err := l.requireString("file_path", "insert")
	if err != nil {
		return nil, "", err
	}
	text, err := l.requireString("insert_text", "insert")
	if err != nil {
		return nil, "", err
	}
	raw, _ := l.raw("insert_line")
	var line float64
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &line) != nil {
		return nil, "", lettaErr("memory insert: 'insert_line' must be a number")
	}
	rel, _, _, f, c, err := t.editableAt(pathArg, "insert")
	if err != nil {
		return nil, "", err
	}
	var lines []string
	if f.body != "" {
		lines = strings.Split(f.body, "\n")
	}
	// 1-indexed; letta-code floors the number and clamps it to the file.
	at := math.Min(math.Max(math.Max(1, math.Floor(line))-1, 0), float64(len(lines)))
	i := int(at)
	lines = append(lines[:i], append(strings.Split(text, "\n"), lines[i:]...)...)
	rendered, err := l.render(f, strings.Join(lines, "\n"), rel)
	if err != nil {
		return nil, "", err
	}
	c.new = []byte(rendered)
	return []change{c}, "memory: insert " + rel, nil
}

func (t *call) lettaDelete() ([]change, string, error) {
	l := t.letta
	pathArg, err := l.requireString("file_path", "delete")
	if err != nil {
		return nil, "", err
	}
	label, err := t.label(pathArg, "file_path")
	if err != nil {
		return nil, "", err
	}
	if err := l.allowed(label); err != nil {
		return nil, "", err
	}
	if l.v2 && isIndexPath(label+".md") {
		return nil, "", lettaErr("memory delete: MEMORY.md indexes cannot be deleted")
	}
	// A folder by the label's name is deleted with all it holds.
	dirRel, _, err := t.place(label)
	if err != nil {
		return nil, "", err
	}
	if st, err := t.wt.Lstat(dirRel); err == nil && isDir(st) {
		files, _, err := t.filesBelow(dirRel)
		if err != nil {
			return nil, "", err
		}
		changes := make([]change, 0, len(files))
		for _, rel := range files {
			cur, err := t.standing(rel)
			if err != nil {
				return nil, "", err
			}
			if blocks.IsReadOnly(rel, cur.Data) {
				return nil, "", l.readOnlyErr(rel)
			}
			changes = append(changes, change{rel: rel, old: cur.Data, oldMode: cur.Mode})
		}
		t.afterApply = func() { t.wt.RemoveAll(dirRel) }
		return changes, "memory: delete " + dirRel, nil
	}
	rel, _, _, _, c, err := t.editableAt(pathArg, "delete")
	if err != nil {
		return nil, "", err
	}
	return []change{c}, "memory: delete " + rel, nil
}

func (t *call) lettaRename() ([]change, string, error) {
	l := t.letta
	oldArg, err := l.requireString("old_path", "rename")
	if err != nil {
		return nil, "", err
	}
	newArg, err := l.requireString("new_path", "rename")
	if err != nil {
		return nil, "", err
	}
	oldLabel, err := t.label(oldArg, "old_path")
	if err != nil {
		return nil, "", err
	}
	newLabel, err := t.label(newArg, "new_path")
	if err != nil {
		return nil, "", err
	}
	if err := l.allowed(oldLabel); err != nil {
		return nil, "", err
	}
	if err := l.allowed(newLabel); err != nil {
		return nil, "", err
	}
	oldRel, oldSrc, err := t.place(oldLabel + ".md")
	if err != nil {
		return nil, "", err
	}
	newRel, _, err := t.place(newLabel + ".md")
	if err != nil {
		return nil, "", err
	}
	if _, err := t.wt.Lstat(newRel); err == nil {
		return nil, "", lettaErr("memory rename: destination already exists at %s", newArg)
	}
	if _, _, err := t.loadEditable(oldRel, oldSrc, oldArg, t.readText); err != nil {
		return nil, "", err
	}
	if l.v2 && (isIndexPath(oldRel) || isIndexPath(newRel)) {
		return nil, "", lettaErr("memory rename: MEMORY.md indexes cannot be renamed")
	}
	if l.v2 {
		if err := assertIndexed(newRel, t.exists); err != nil {
			return nil, "", err
		}
	}
	if err := t.checkParents(newRel); err != nil {
		return nil, "", err
	}
	cur, err := t.standing(oldRel)
	if err != nil {
		return nil, "", err
	}
	if blocks.IsReadOnlyPath(newRel) {
		return nil, "", l.readOnlyErr(newArg)
	}
	return []change{
		{rel: oldRel, old: cur.Data, oldMode: cur.Mode},
		{rel: newRel, new: cur.Data, newMode: cur.Mode},
	}, "memory: rename " + oldRel + " -> " + newRel, nil
}

func (t *call) lettaUpdateDescription() ([]change, string, error) {
	l := t.letta
	pathArg, err := l.requireString("file_path", "update_description")
	if err != nil {
		return nil, "", err
	}
	description, err := l.requireString("description", "update_description")
	if err != nil {
		return nil, "", err
	}
	rel, _, _, f, c, err := t.editableAt(pathArg, "update_description")
	if err != nil {
		return nil, "", err
	}
	if l.v2 && isIndexPath(rel) {
		return nil, "", lettaErr("memory update_description: MEMORY.md has no frontmatter")
	}
	f.description = description
	rendered, err := l.render(f, f.body, rel)
	if err != nil {
		return nil, "", err
	}
	c.new = []byte(rendered)
	return []change{c}, "memory: update_description " + rel, nil
}
