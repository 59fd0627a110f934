package agent

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/reminders"
)

// Budgets of the rendered context, letta-code's for its memory filesystem
// tree, and the size past which a warning is given.
const (
	ContextTreeMaxLines    = 500
	ContextTreeMaxChars    = 20000
	ContextTreeMaxChildren = 50
	ContextWarnTokens      = 30000
)

// Context is the memory as the agent's prompt shows it, from the committed
// HEAD (never a half-written file).
type Context struct {
	Format   string   `json:"format"` // FormatMemfsd, FormatLettaCode or FormatLettaLocal
	Revision string   `json:"revision"`
	Text     string   `json:"text"`
	Tokens   int      `json:"tokens"` // estimate: bytes ÷ 4
	Warnings []string `json:"warnings"`
}

// contextCache keeps the last rendering (by revision) and the descriptions
// of files by blob id, so a call per turn costs a map lookup when nothing
// changed and only the changed files' reads when something did.
type contextCache struct {
	revision plumbing.Hash
	ctx      Context
	descs    map[plumbing.Hash]string
	letta    map[string]Context // letta-code's formats, by format, at revision lettaRev
	lettaRev plumbing.Hash
}

// Context renders the memory for the agent's prompt (letta-code's layout):
// the system/ blocks pinned in full, each with its path, description and
// read-only flag, then the other files as a tree with their descriptions
// (a file without front matter shows its first line), within letta-code's
// budgets (500 lines, 20,000 characters, 50 entries per folder with "… N
// more entries" lines).
func (a *Agent) Context() (Context, error) {
	repo := a.repository()
	if repo == nil {
		return Context{}, ErrNotReady
	}
	a.ctxMu.Lock()
	defer a.ctxMu.Unlock()
	// The common call: nothing committed since the last one. One ref read.
	if cur, err := repo.Head(); err == nil && !cur.IsZero() && cur == a.ctxCache.revision {
		return a.ctxCache.ctx, nil
	}
	head, files, err := repo.HeadFiles()
	if err != nil {
		return Context{}, fmt.Errorf("context %s: %w", a.ID, err)
	}
	if a.ctxCache.descs == nil {
		a.ctxCache.descs = map[plumbing.Hash]string{}
	}
	seen := map[plumbing.Hash]bool{}
	var pinned strings.Builder
	var others []treeFile
	pinned.WriteString("<memory_blocks>\nThe files under system/ are pinned: always in context, shown in full.\n")
	for _, f := range files {
		if strings.HasPrefix(f.Path, "system/") {
			data, err := repo.Blob(f.Blob)
			if err != nil {
				return Context{}, fmt.Errorf("context %s: %w", a.ID, err)
			}
			tag, shown := f.Path, reminders.ShowPath(f.Path)
			if reminders.BadName(f.Path) {
				tag = strings.Trim(strconv.Quote(f.Path), `"`)
			}
			if isBinary(data) {
				// Committed, never shown raw: its bytes are not text.
				fmt.Fprintf(&pinned, "\n<%s>\n<path>%s</path>\n<value>\n%s\n</value>\n</%s>\n", tag, shown, binaryLine(data), tag)
				continue
			}
			fm := blocks.Parse(data)
			desc, _ := fm.Get("description")
			fmt.Fprintf(&pinned, "\n<%s>\n<path>%s</path>\n", tag, shown)
			if desc != "" {
				fmt.Fprintf(&pinned, "<description>%s</description>\n", oneLine(desc))
			}
			fmt.Fprintf(&pinned, "<read_only>%t</read_only>\n", blocks.IsReadOnly(f.Path, data))
			if limit, ok := blocks.Limit(data); ok {
				fmt.Fprintf(&pinned, "<chars_current>%d</chars_current>\n<chars_limit>%d</chars_limit>\n", blocks.BodyLen(data), limit)
			}
			fmt.Fprintf(&pinned, "<value>\n%s\n</value>\n</%s>\n", strings.TrimRight(string(fm.Body), "\n"), tag)
			continue
		}
		desc, ok := a.ctxCache.descs[f.Blob]
		if !ok {
			data, err := repo.Blob(f.Blob)
			if err != nil {
				return Context{}, fmt.Errorf("context %s: %w", a.ID, err)
			}
			desc = describe(data)
			a.ctxCache.descs[f.Blob] = desc
		}
		seen[f.Blob] = true
		others = append(others, treeFile{path: f.Path, desc: desc})
	}
	pinned.WriteString("</memory_blocks>\n")
	for h := range a.ctxCache.descs { // forget blobs no longer in HEAD
		if !seen[h] {
			delete(a.ctxCache.descs, h)
		}
	}
	tree, truncated := renderTree(others, ContextTreeMaxLines, ContextTreeMaxChars, ContextTreeMaxChildren)
	text := pinned.String() + "\n<memory_filesystem>\nThe other memory files (read them with the memory tool's view):\n" + tree + "\n</memory_filesystem>"
	c := Context{Format: FormatMemfsd, Revision: hashString(head), Text: text, Tokens: len(text) / 4, Warnings: []string{}}
	if truncated {
		c.Warnings = append(c.Warnings, "the file tree is over its budget and was cut; reorganise memory into fewer, larger files or folders")
	}
	if c.Tokens > ContextWarnTokens {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the memory context is about %d tokens, over %d: shorten the pinned blocks or move content out of system/", c.Tokens, ContextWarnTokens))
	}
	a.ctxCache.revision, a.ctxCache.ctx = head, c
	return c, nil
}

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

type treeFile struct{ path, desc string }

type treeNode struct {
	children map[string]*treeNode
	file     bool
	desc     string
}

// renderTree draws files as letta-code's memory tree: "/memories/" then
// folders before files, each sorted, "├──"/"└──" branches, at most
// maxChildren entries per folder (then "… (N more entries)"), and the whole
// within maxLines and maxChars, ending with a truncation notice when cut.
func renderTree(files []treeFile, maxLines, maxChars, maxChildren int) (string, bool) {
	root := &treeNode{children: map[string]*treeNode{}}
	total := 0
	for _, f := range files {
		n := root
		parts := strings.Split(f.path, "/")
		for i, p := range parts {
			if reminders.BadName(p) {
				p = strconv.Quote(p) // one line, and the agent sees the bytes
			}
			c, ok := n.children[p]
			if !ok {
				c = &treeNode{children: map[string]*treeNode{}}
				n.children[p] = c
				total++
			}
			if i == len(parts)-1 {
				c.file, c.desc = true, f.desc
			}
			n = c
		}
	}
	lines := []string{"/memories/"}
	chars := len(lines[0])
	fits := func(l string) bool { return len(lines)+1 <= maxLines && chars+1+len(l) <= maxChars }
	var render func(n *treeNode, prefix string) bool
	render = func(n *treeNode, prefix string) bool {
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		sort.Slice(names, func(i, j int) bool {
			a, b := n.children[names[i]], n.children[names[j]]
			if a.file != b.file {
				return !a.file
			}
			return names[i] < names[j]
		})
		shown := names
		more := 0
		if len(names) > maxChildren {
			shown, more = names[:maxChildren], len(names)-maxChildren
		}
		for i, name := range shown {
			c := n.children[name]
			last := i == len(shown)-1 && more == 0
			branch, next := "├── ", "│   "
			if last {
				branch, next = "└── ", "    "
			}
			line := prefix + branch + name
			if !c.file {
				line += "/"
			} else if c.desc != "" {
				line += " — " + c.desc
			}
			if !fits(line) {
				return false
			}
			lines = append(lines, line)
			chars += 1 + len(line)
			if !c.file && !render(c, prefix+next) {
				return false
			}
		}
		if more > 0 {
			line := fmt.Sprintf("%s└── … (%d more entries)", prefix, more)
			if !fits(line) {
				return false
			}
			lines = append(lines, line)
			chars += 1 + len(line)
		}
		return true
	}
	if render(root, "") {
		return strings.Join(lines, "\n"), false
	}
	for len(lines) > 1 {
		shown := len(lines) - 1
		notice := fmt.Sprintf("[Tree truncated: showing %d of %d entries. %d omitted.]", shown, total, max(1, total-shown))
		if fits(notice) {
			lines = append(lines, notice)
			break
		}
		chars -= 1 + len(lines[len(lines)-1])
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n"), true
}

// ReadContext renders an agent's context from disk, with no daemon, in a
// format of ParseContextFormat's ("" is memfsd's).
func ReadContext(cfg *Config, id, format string) (Context, error) {
	format, err := ParseContextFormat(format)
	if err != nil {
		return Context{}, err
	}
	a, err := New(cfg, id)
	if err != nil {
		return Context{}, err
	}
	repo, err := gitmem.Open(a.Dir(), gitmem.Remote{URL: cfg.RemoteURL(id)}, gitmem.Options{Logger: cfg.Logger})
	if err != nil {
		return Context{}, err
	}
	defer repo.Close()
	a.repo = repo
	return a.ContextAs(format)
}
