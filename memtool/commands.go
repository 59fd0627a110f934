package memtool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memfsd/memfsd/blocks"
)

const lineNumberWidth = 6 // len(str(999999)) in the reference handler

func numbered(n int, line string) string {
	return fmt.Sprintf("%*d\t%s", lineNumberWidth, n, line)
}

func (t *Tool) view(in Input) (string, error) {
	rel, abs, err := t.resolve(in.Path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", toolErr("The path %s does not exist. Please provide a valid path.", in.Path)
	}
	if fi.IsDir() {
		return t.viewDir(in.Path, abs, fi)
	}
	if !fi.Mode().IsRegular() {
		return "", toolErr("Unsupported file type for %s", in.Path)
	}
	_ = rel
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", toolErr("The file %s no longer exists (may have been deleted or renamed concurrently).", in.Path)
	}
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

// viewDir lists two levels, hidden names left out, sizes from stat.
func (t *Tool) viewDir(shown, abs string, fi os.FileInfo) (string, error) {
	type item struct{ size, path string }
	var items []item
	var collect func(dir, rel string, depth int)
	collect = func(dir, rel string, depth int) {
		if depth > 2 {
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := e.Name()
			if rel != "" {
				p = rel + "/" + e.Name()
			}
			full := filepath.Join(dir, e.Name())
			st, err := os.Stat(full)
			if err != nil {
				continue
			}
			if st.IsDir() {
				items = append(items, item{formatSize(st.Size()), p + "/"})
				if depth < 2 {
					collect(full, p, depth+1)
				}
			} else if st.Mode().IsRegular() {
				items = append(items, item{formatSize(st.Size()), p})
			}
		}
	}
	collect(abs, "", 1)
	lines := []string{formatSize(fi.Size()) + "\t" + shown}
	for _, it := range items {
		lines = append(lines, it.size+"\t"+shown+"/"+it.path)
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

func (t *Tool) create(in Input) (string, error) {
	text, err := need(in.FileText, "file_text", "create")
	if err != nil {
		return "", err
	}
	rel, abs, err := t.resolve(in.Path)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return "", toolErr("File %s already exists", in.Path)
	}
	if err := t.readOnlyFirst(rel, abs, in.Path); err != nil {
		return "", err
	}
	if _, err := os.Lstat(abs); err == nil {
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
	if err := t.apply([]change{{rel: rel, new: []byte(text)}}, message(in, "memory: create "+display(rel))); err != nil {
		return "", err
	}
	return "File created successfully at: " + in.Path, nil
}

// checkParents refuses a path whose parent folders include a file.
func (t *Tool) checkParents(rel string) error {
	dir := filepath.Dir(filepath.Join(t.Dir, filepath.FromSlash(rel)))
	for d := dir; d != t.Dir && strings.HasPrefix(d, t.Dir); d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
			r, _ := filepath.Rel(t.Dir, d)
			return toolErr("Cannot create %s: %s is a file, not a directory", display(rel), display(filepath.ToSlash(r)))
		}
	}
	return nil
}

// readFile reads an existing regular file for an edit command.
func (t *Tool) readFile(shown, abs string) ([]byte, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, toolErr("The path %s does not exist. Please provide a valid path.", shown)
	}
	if !fi.Mode().IsRegular() {
		return nil, toolErr("The path %s is not a file.", shown)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, toolErr("The file %s no longer exists (may have been deleted or renamed concurrently).", shown)
	}
	return data, nil
}

// readOnlyFirst answers a write command on a read-only path before any
// other answer (exists, missing, ...): a fixed block by its path, any other
// file by its front matter.
func (t *Tool) readOnlyFirst(rel, abs, shown string) error {
	if rel == "" {
		return nil
	}
	if blocks.IsReadOnlyPath(rel) {
		return toolErr("%s is read-only and cannot be modified", shown)
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode().IsRegular() {
		if data, err := os.ReadFile(abs); err == nil && blocks.IsReadOnly(rel, data) {
			return toolErr("%s is read-only and cannot be modified", shown)
		}
	}
	return nil
}

// readForEdit resolves a path to edit, reads the file, and refuses a
// read-only block before any other answer about its content.
func (t *Tool) readForEdit(p string) (string, []byte, error) {
	rel, abs, err := t.resolve(p)
	if err != nil {
		return "", nil, err
	}
	if err := t.readOnlyFirst(rel, abs, p); err != nil {
		return "", nil, err
	}
	data, err := t.readFile(p, abs)
	if err != nil {
		return "", nil, err
	}
	if blocks.IsReadOnly(rel, data) {
		return "", nil, toolErr("%s is read-only and cannot be modified", p)
	}
	return rel, data, nil
}

func (t *Tool) strReplace(in Input) (string, error) {
	oldStr, err := need(in.OldStr, "old_str", "str_replace")
	if err != nil {
		return "", err
	}
	newStr := ""
	if in.NewStr != nil {
		newStr = *in.NewStr
	}
	rel, data, err := t.readForEdit(in.Path)
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
	if err := t.apply([]change{{rel: rel, old: data, new: []byte(updated)}}, message(in, "memory: str_replace "+display(rel))); err != nil {
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

func (t *Tool) insert(in Input) (string, error) {
	line, err := need(in.InsertLine, "insert_line", "insert")
	if err != nil {
		return "", err
	}
	text, err := need(in.InsertText, "insert_text", "insert")
	if err != nil {
		return "", err
	}
	rel, data, err := t.readForEdit(in.Path)
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
	if err := t.apply([]change{{rel: rel, old: data, new: []byte(updated)}}, message(in, "memory: insert "+display(rel))); err != nil {
		return "", err
	}
	return "The file " + in.Path + " has been edited.", nil
}

func (t *Tool) delete(in Input) (string, error) {
	rel, abs, err := t.resolve(in.Path)
	if err != nil {
		return "", err
	}
	if rel == "" {
		return "", toolErr("Cannot delete the /memories directory itself")
	}
	if err := t.readOnlyFirst(rel, abs, in.Path); err != nil {
		return "", err
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return "", toolErr("The path %s does not exist", in.Path)
	}
	var files []string
	if fi.IsDir() {
		if files, _, err = t.filesBelow(rel, abs); err != nil {
			return "", err
		}
	} else {
		files = []string{rel}
	}
	changes := make([]change, 0, len(files))
	for _, f := range files {
		old, err := readIfExists(filepath.Join(t.Dir, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		if err := t.checkWrite(f, display(f), old, nil); err != nil {
			return "", err
		}
		changes = append(changes, change{rel: f, old: old})
	}
	if err := t.apply(changes, message(in, "memory: delete "+display(rel))); err != nil {
		return "", err
	}
	if fi.IsDir() {
		if err := os.RemoveAll(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "Successfully deleted " + in.Path, nil
}

func (t *Tool) rename(in Input) (string, error) {
	oldRel, oldAbs, err := t.resolve(in.OldPath)
	if err != nil {
		return "", err
	}
	newRel, newAbs, err := t.resolve(in.NewPath)
	if err != nil {
		return "", err
	}
	if oldRel == "" || newRel == "" {
		return "", toolErr("Cannot rename the /memories directory itself")
	}
	if err := t.readOnlyFirst(oldRel, oldAbs, in.OldPath); err != nil {
		return "", err
	}
	if err := t.readOnlyFirst(newRel, newAbs, in.NewPath); err != nil {
		return "", err
	}
	if _, err := os.Lstat(newAbs); err == nil {
		return "", toolErr("The destination %s already exists", in.NewPath)
	}
	fi, err := os.Lstat(oldAbs)
	if err != nil {
		return "", toolErr("The path %s does not exist", in.OldPath)
	}
	if newRel == oldRel || strings.HasPrefix(newRel, oldRel+"/") {
		return "", toolErr("Cannot move %s into itself", in.OldPath)
	}
	if err := t.checkParents(newRel); err != nil {
		return "", err
	}
	var files, skipped []string
	if fi.IsDir() {
		if files, skipped, err = t.filesBelow(oldRel, oldAbs); err != nil {
			return "", err
		}
	} else {
		files = []string{oldRel}
	}
	var changes []change
	for _, f := range files {
		data, err := readIfExists(filepath.Join(t.Dir, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		dest := newRel + strings.TrimPrefix(f, oldRel)
		if err := t.checkWrite(f, display(f), data, nil); err != nil {
			return "", err
		}
		if err := t.checkWrite(dest, display(dest), nil, data); err != nil {
			return "", err
		}
		changes = append(changes, change{rel: f, old: data}, change{rel: dest, new: data})
	}
	msg := message(in, "memory: rename "+display(oldRel)+" -> "+display(newRel))
	if err := t.apply(changes, msg); err != nil {
		return "", err
	}
	if fi.IsDir() {
		// What is not memory (a nested repository's .git) is never
		// committed, but it is the agent's: it moves with the folder.
		for _, s := range skipped {
			dst := filepath.Join(t.Dir, filepath.FromSlash(newRel+strings.TrimPrefix(s, oldRel)))
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
				_ = os.Rename(filepath.Join(t.Dir, filepath.FromSlash(s)), dst)
			}
		}
		os.RemoveAll(oldAbs)
	}
	return "Successfully renamed " + in.OldPath + " to " + in.NewPath, nil
}
