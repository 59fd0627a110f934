package memtool

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/worktree"
)

const lineNumberWidth = 6 // len(str(999999)) in the reference handler

func numbered(n int, line string) string {
	return fmt.Sprintf("%*d\t%s", lineNumberWidth, n, line)
}

func (t *call) view(in Input) (string, error) {
	_, src, err := t.resolve(in.Path)
	if err != nil {
		return "", err
	}
	st, err := t.lstat(src)
	if err != nil {
		if isLinkRefusal(err) {
			return "", errViaSymlink
		}
		return "", toolErr("The path %s does not exist. Please provide a valid path.", in.Path)
	}
	if isDir(st) {
		return t.viewDir(in.Path, src, st)
	}
	if isLink(st) {
		return "", errViaSymlink // a link now, where resolve saw none
	}
	if !isRegular(st) {
		return "", toolErr("Unsupported file type for %s", in.Path)
	}
	f, err := t.wt.Read(src)
	if err != nil || f == nil || f.Mode == worktree.Symlink {
		return "", toolErr("The file %s no longer exists (may have been deleted or renamed concurrently).", in.Path)
	}
	data := f.Data
	lines := strings.Split(string(data), "\n")
	if len(lines) > 999999 {
		return "", toolErr("File %s exceeds maximum line limit of 999,999 lines.", in.Path)
	}
	start := 1
	if len(in.ViewRange) == 2 {
		from := max(1, in.ViewRange[0]) - 1
		to := len(lines)
		if in.ViewRange[1] != -1 {
			to = min(in.ViewRange[1], len(lines))
		}
		from = min(from, len(lines))
		if to < from {
			to = from
		}
		lines = lines[from:to]
		start = from + 1
	}
	var b strings.Builder
	b.WriteString("Here's the content of " + in.Path + " with line numbers:\n")
	chars := 0
	for i, line := range lines {
		n := utf8.RuneCountInString(line) + 1
		if i == 0 && n > ViewLimit {
			// One line longer than the whole budget: cut inside it.
			runes := []rune(line)
			b.WriteString(numbered(start, string(runes[:ViewLimit])))
			total := start + len(lines) - 1
			fmt.Fprintf(&b, "\n[output cut at %d characters inside line %d, which has %d characters; the rest of that line is not shown",
				ViewLimit, start, len(runes))
			if total > start {
				fmt.Fprintf(&b, "; read on after it with \"view_range\": [%d, %d]", start+1, total)
			}
			b.WriteString("]")
			return b.String(), nil
		}
		if chars+n > ViewLimit && i > 0 {
			last := start + i - 1
			total := start + len(lines) - 1
			fmt.Fprintf(&b, "\n[output cut at %d characters: lines %d-%d shown; read on with \"view_range\": [%d, %d]]",
				ViewLimit, start, last, last+1, total)
			return b.String(), nil
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(numbered(start+i, line))
		chars += n
	}
	return b.String(), nil
}

// lstat stats rel through t.wt without following a link ("" is the
// memory folder itself).
func (t *call) lstat(rel string) (*syscall.Stat_t, error) {
	if rel == "" {
		return t.wt.Stat()
	}
	return t.wt.Lstat(rel)
}

// viewDir lists two levels below the folder rel, hidden names left out,
// sizes from stat. Folders are listed through t.wt; a link is not listed
// (nor followed: it may lead anywhere).
func (t *call) viewDir(shown, rel string, st *syscall.Stat_t) (string, error) {
	type item struct{ size, path string }
	var items []item
	var collect func(dir, sub string, depth int)
	collect = func(dir, sub string, depth int) {
		if depth > 2 {
			return
		}
		entries, err := t.wt.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries { // sorted by name
			if strings.HasPrefix(e.Name, ".") {
				continue
			}
			p := e.Name
			if sub != "" {
				p = sub + "/" + e.Name
			}
			at := e.Name
			if dir != "" {
				at = dir + "/" + e.Name
			}
			if e.IsDir() {
				items = append(items, item{formatSize(e.Stat.Size), p + "/"})
				if depth < 2 {
					collect(at, p, depth+1)
				}
			} else if isRegular(e.Stat) {
				items = append(items, item{formatSize(e.Stat.Size), p})
			}
		}
	}
	collect(rel, "", 1)
	lines := []string{formatSize(st.Size) + "\t" + shown}
	for _, it := range items {
		line := shown + "/" + it.path
		if worktree.OddName(it.path) {
			// A name with a newline or bytes that are not UTF-8 (written
			// by a shell) would split the listing: quoted, on its line.
			line = strconv.Quote(line)
		}
		lines = append(lines, it.size+"\t"+line)
	}
	return "Here're the files and directories up to 2 levels deep in " + shown + ", excluding hidden items:\n" + strings.Join(lines, "\n"), nil
}

// formatSize is the reference handler's size: 0B, 512B, 1.5K, 2K, 3.1M.
func formatSize(n int64) string {
	if n == 0 {
		return "0B"
	}
	units := []string{"B", "K", "M", "G"}
	i := (bitLen(n) - 1) / 10
	i = min(i, len(units)-1)
	size := float64(n) / float64(int64(1)<<(10*i))
	if size == float64(int64(size)) {
		return strconv.FormatInt(int64(size), 10) + units[i]
	}
	return strconv.FormatFloat(size, 'f', 1, 64) + units[i]
}

func bitLen(n int64) int {
	l := 0
	for n > 0 {
		l++
		n >>= 1
	}
	return l
}

func (t *call) create(in Input) (string, error) {
	text, err := need(in.FileText, "file_text", "create")
	if err != nil {
		return "", err
	}
	rel, src, err := t.resolve(in.Path)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return "", toolErr("File %s already exists", in.Path)
	}
	if err := t.readOnlyFirst(rel, src, in.Path); err != nil {
		return "", err
	}
	if _, err := t.wt.Lstat(rel); err == nil {
		return "", toolErr("File %s already exists", in.Path)
	}
	if err := t.checkWrite(rel, in.Path, nil, []byte(text)); err != nil {
		return "", err
	}
	if err := t.checkSecret(text); err != nil {
		return "", err
	}
	if err := t.checkParents(rel); err != nil {
		return "", err
	}
	if _, err := t.apply([]change{{rel: rel, new: []byte(text)}}, message(in, "memory: create "+rel)); err != nil {
		return "", err
	}
	return "File created successfully at: " + in.Path, nil
}

// checkParents refuses a path whose parent folders include a file.
func (t *call) checkParents(rel string) error {
	for d := path.Dir(rel); d != "." && d != ""; d = path.Dir(d) {
		st, err := t.wt.Lstat(d)
		if err == nil && isLink(st) {
			return errViaSymlink // a link now, where resolve saw none
		}
		if err == nil && !isDir(st) {
			return toolErr("Cannot create %s: %s is a file, not a directory", display(rel), display(d))
		}
	}
	return nil
}

// readFile reads src, an existing regular file, for an edit command.
func (t *call) readFile(shown, src string) ([]byte, error) {
	st, err := t.lstat(src)
	if err != nil {
		if isLinkRefusal(err) {
			return nil, errViaSymlink
		}
		return nil, toolErr("The path %s does not exist. Please provide a valid path.", shown)
	}
	if isLink(st) {
		return nil, errViaSymlink // a link now, where resolve saw none
	}
	if !isRegular(st) {
		return nil, toolErr("The path %s is not a file.", shown)
	}
	f, err := t.wt.Read(src)
	if err != nil || f == nil || f.Mode == worktree.Symlink {
		return nil, toolErr("The file %s no longer exists (may have been deleted or renamed concurrently).", shown)
	}
	return f.Data, nil
}

// readOnlyFirst answers a write command on a read-only path before any
// other answer (exists, missing, ...): a fixed block by its path, any other
// file by its front matter (read at src, where rel's link leads).
func (t *call) readOnlyFirst(rel, src, shown string) error {
	if rel == "" {
		return nil
	}
	if blocks.IsReadOnlyPath(rel) {
		return toolErr("%s is read-only and cannot be modified", shown)
	}
	if src == "" {
		return nil
	}
	if f, err := t.wt.Read(src); err == nil && f != nil && f.Mode != worktree.Symlink && blocks.IsReadOnly(rel, f.Data) {
		return toolErr("%s is read-only and cannot be modified", shown)
	}
	return nil
}

// standing reads what stands at rel itself (a link as a link), for an
// undo to put back; nil when nothing does.
func (t *call) standing(rel string) (*worktree.File, error) {
	f, err := t.wt.Read(rel)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return &worktree.File{}, nil
	}
	return f, nil
}

// readForEdit resolves a path to edit, reads the file (where a link at the
// path leads), and refuses a read-only block before any other answer about
// its content. before is what stands at rel, for an undo.
func (t *call) readForEdit(p string) (rel string, data []byte, before *worktree.File, err error) {
	rel, src, err := t.resolve(p)
	if err != nil {
		return "", nil, nil, err
	}
	if err := t.readOnlyFirst(rel, src, p); err != nil {
		return "", nil, nil, err
	}
	data, err = t.readFile(p, src)
	if err != nil {
		return "", nil, nil, err
	}
	if blocks.IsReadOnly(rel, data) {
		return "", nil, nil, toolErr("%s is read-only and cannot be modified", p)
	}
	if before, err = t.standing(rel); err != nil {
		return "", nil, nil, err
	}
	return rel, data, before, nil
}

func (t *call) strReplace(in Input) (string, error) {
	oldStr, err := need(in.OldStr, "old_str", "str_replace")
	if err != nil {
		return "", err
	}
	newStr := ""
	if in.NewStr != nil {
		newStr = *in.NewStr
	}
	rel, data, before, err := t.readForEdit(in.Path)
	if err != nil {
		return "", err
	}
	content := string(data)
	count := 0
	if oldStr != "" {
		count = strings.Count(content, oldStr)
	}
	switch {
	case count == 0:
		return "", toolErr("No replacement was performed, old_str `%s` did not appear verbatim in %s.", oldStr, in.Path)
	case count > 1:
		var lines []string
		for start := 0; ; {
			pos := strings.Index(content[start:], oldStr)
			if pos < 0 {
				break
			}
			pos += start
			lines = append(lines, strconv.Itoa(strings.Count(content[:pos], "\n")+1))
			start = pos + 1
		}
		return "", toolErr("No replacement was performed. Multiple occurrences of old_str `%s` in lines: %s. Please ensure it is unique", oldStr, strings.Join(lines, ", "))
	}
	pos := strings.Index(content, oldStr)
	changedLine := strings.Count(content[:pos], "\n")
	updated := strings.Replace(content, oldStr, newStr, 1)
	if err := t.checkWrite(rel, in.Path, data, []byte(updated)); err != nil {
		return "", err
	}
	if err := t.checkSecret(newStr); err != nil {
		return "", err
	}
	if _, err := t.apply([]change{{rel: rel, old: before.Data, oldMode: before.Mode, new: []byte(updated)}}, message(in, "memory: str_replace "+rel)); err != nil {
		return "", err
	}
	newLines := strings.Split(updated, "\n")
	from := max(0, changedLine-2)
	to := min(len(newLines), changedLine+3)
	snippet := make([]string, 0, to-from)
	for n := from + 1; n <= to; n++ {
		snippet = append(snippet, numbered(n, newLines[n-1]))
	}
	return "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" + strings.Join(snippet, "\n"), nil
}

// splitLines is Python's str.splitlines.
func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\v', '\f', '\x1c', '\x1d', '\x1e', '\u0085', '\u2028', '\u2029':
			out = append(out, s[start:i])
			i += size
			start = i
			continue
		case '\r':
			out = append(out, s[start:i])
			i += size
			if i < len(s) && s[i] == '\n' {
				i++
			}
			start = i
			continue
		}
		i += size
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func (t *call) insert(in Input) (string, error) {
	line, err := need(in.InsertLine, "insert_line", "insert")
	if err != nil {
		return "", err
	}
	text, err := need(in.InsertText, "insert_text", "insert")
	if err != nil {
		return "", err
	}
	rel, data, before, err := t.readForEdit(in.Path)
	if err != nil {
		return "", err
	}
	lines := splitLines(string(data))
	if line < 0 || line > len(lines) {
		return "", toolErr("Invalid `insert_line` parameter: %d. It should be within the range [0, %d].", line, len(lines))
	}
	lines = slices.Insert(lines, line, strings.TrimRight(text, "\n"))
	updated := strings.Join(lines, "\n")
	if !strings.HasSuffix(updated, "\n") {
		updated += "\n"
	}
	if err := t.checkWrite(rel, in.Path, data, []byte(updated)); err != nil {
		return "", err
	}
	if err := t.checkSecret(text); err != nil {
		return "", err
	}
	if _, err := t.apply([]change{{rel: rel, old: before.Data, oldMode: before.Mode, new: []byte(updated)}}, message(in, "memory: insert "+rel)); err != nil {
		return "", err
	}
	return "The file " + in.Path + " has been edited.", nil
}

func (t *call) delete(in Input) (string, error) {
	rel, src, err := t.resolve(in.Path)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return "", toolErr("Cannot delete the /memories directory itself")
	}
	if err := t.readOnlyFirst(rel, src, in.Path); err != nil {
		return "", err
	}
	st, err := t.wt.Lstat(rel)
	if err != nil {
		if isLinkRefusal(err) {
			return "", errViaSymlink
		}
		return "", toolErr("The path %s does not exist", in.Path)
	}
	var files []string
	if isDir(st) {
		if files, _, err = t.filesBelow(rel); err != nil {
			return "", err
		}
	} else {
		files = []string{rel}
	}
	changes := make([]change, 0, len(files))
	for _, f := range files {
		old, err := t.wt.Read(f)
		if err != nil {
			return "", err
		}
		c := change{rel: f}
		if old != nil {
			c.old, c.oldMode = old.Data, old.Mode
		}
		if err := t.checkWrite(f, display(f), c.old, nil); err != nil {
			return "", err
		}
		changes = append(changes, c)
	}
	if _, err := t.apply(changes, message(in, "memory: delete "+rel)); err != nil {
		return "", err
	}
	if isDir(st) {
		if err := t.wt.RemoveAll(rel); err != nil {
			return "", err
		}
	}
	return "Successfully deleted " + in.Path, nil
}

func (t *call) rename(in Input) (string, error) {
	oldRel, oldSrc, err := t.resolve(in.OldPath)
	if err != nil {
		return "", err
	}
	newRel, newSrc, err := t.resolve(in.NewPath)
	if err != nil {
		return "", err
	}
	if oldRel == "" || newRel == "" {
		return "", toolErr("Cannot rename the /memories directory itself")
	}
	if err := t.readOnlyFirst(oldRel, oldSrc, in.OldPath); err != nil {
		return "", err
	}
	if err := t.readOnlyFirst(newRel, newSrc, in.NewPath); err != nil {
		return "", err
	}
	if _, err := t.wt.Lstat(newRel); err == nil {
		return "", toolErr("The destination %s already exists", in.NewPath)
	}
	st, err := t.wt.Lstat(oldRel)
	if err != nil {
		if isLinkRefusal(err) {
			return "", errViaSymlink
		}
		return "", toolErr("The path %s does not exist", in.OldPath)
	}
	if newRel == oldRel || strings.HasPrefix(newRel, oldRel+"/") {
		return "", toolErr("Cannot move %s into itself", in.OldPath)
	}
	if err := t.checkParents(newRel); err != nil {
		return "", err
	}
	var files, skipped []string
	if isDir(st) {
		if files, skipped, err = t.filesBelow(oldRel); err != nil {
			return "", err
		}
	} else {
		files = []string{oldRel}
	}
	var changes []change
	for _, f := range files {
		cur, err := t.wt.Read(f)
		if err != nil {
			return "", err
		}
		var data []byte
		mode := worktree.Regular
		if cur != nil {
			data, mode = cur.Data, cur.Mode
		}
		dest := newRel + strings.TrimPrefix(f, oldRel)
		if err := t.checkWrite(f, display(f), data, nil); err != nil {
			return "", err
		}
		if err := t.checkWrite(dest, display(dest), nil, data); err != nil {
			return "", err
		}
		changes = append(changes, change{rel: f, old: data, oldMode: mode}, change{rel: dest, new: data, newMode: mode})
	}
	msg := message(in, "memory: rename "+oldRel+" -> "+newRel)
	if _, err := t.apply(changes, msg); err != nil {
		return "", err
	}
	if isDir(st) {
		// What is not memory (a nested repository's .git) is never
		// committed, but it is the agent's: it moves with the folder.
		for _, s := range skipped {
			_ = t.wt.Rename(s, newRel+strings.TrimPrefix(s, oldRel), 0)
		}
		t.wt.RemoveAll(oldRel)
	}
	return "Successfully renamed " + in.OldPath + " to " + in.NewPath, nil
}
