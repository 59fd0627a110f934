// Package memcontext renders an agent's memory as its prompt shows it,
// from a repository's committed HEAD: memfsd's own format (pinned blocks,
// then the file tree with descriptions) and letta-code's two, each cached
// by revision.
package memcontext

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/blocks"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/letta"
	"github.com/memfsd/memfsd/reminders"
)

// Budgets of the rendered context, letta-code's for its memory filesystem
// tree, and the size past which a warning is given.
const (
	TreeMaxLines    = 500
	TreeMaxChars    = 20000
	TreeMaxChildren = 50
	WarnTokens      = 30000
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

// The context formats: memfsd's own (the default) and letta-code's two.
const (
	FormatMemfsd     = "memfsd"      // Context: /memories/ paths, as the memory tool names them
	FormatLettaCode  = "letta-code"  // letta-code's parent-memory snapshot (memfs v1 or v2)
	FormatLettaLocal = "letta-local" // letta-code's local backend's projection
)

// ParseFormat checks a format name ("" is FormatMemfsd).
func ParseFormat(s string) (string, error) {
	switch s {
	case "", FormatMemfsd:
		return FormatMemfsd, nil
	case FormatLettaCode, FormatLettaLocal:
		return s, nil
	}
	return "", fmt.Errorf("unknown context format %q: use %s, %s or %s", s, FormatMemfsd, FormatLettaCode, FormatLettaLocal)
}

// Cache renders one memory's context and keeps the last rendering (by
// revision) and the descriptions of files by blob id, so a call per turn
// costs a map lookup when nothing changed and only the changed files'
// reads when something did. Safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	revision plumbing.Hash
	ctx      Context
	descs    map[plumbing.Hash]string
	letta    map[string]Context // letta-code's formats, by format, at revision lettaRev
	lettaRev plumbing.Hash
}

// Render renders the memory of agent id for its prompt (letta-code's layout):
// the system/ blocks pinned in full, each with its path, description and
// read-only flag, then the other files as a tree with their descriptions
// (a file without front matter shows its first line), within letta-code's
// budgets (500 lines, 20,000 characters, 50 entries per folder with "… N
// more entries" lines).
func (cc *Cache) Render(repo *gitmem.Repo, id string) (Context, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	// The common call: nothing committed since the last one. One ref read.
	if cur, err := repo.Head(); err == nil && !cur.IsZero() && cur == cc.revision {
		return cc.ctx, nil
	}
	head, files, err := repo.HeadFiles()
	if err != nil {
		return Context{}, fmt.Errorf("context %s: %w", id, err)
	}
	if cc.descs == nil {
		cc.descs = map[plumbing.Hash]string{}
	}
	seen := map[plumbing.Hash]bool{}
	var pinned strings.Builder
	var others []treeFile
	pinned.WriteString("<memory_blocks>\nThe files under system/ are pinned: always in context, shown in full.\n")
	for _, f := range files {
		if strings.HasPrefix(f.Path, "system/") {
			data, err := repo.Blob(f.Blob)
			if err != nil {
				return Context{}, fmt.Errorf("context %s: %w", id, err)
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
		desc, ok := cc.descs[f.Blob]
		if !ok {
			data, err := repo.Blob(f.Blob)
			if err != nil {
				return Context{}, fmt.Errorf("context %s: %w", id, err)
			}
			desc = describe(data)
			cc.descs[f.Blob] = desc
		}
		seen[f.Blob] = true
		others = append(others, treeFile{path: f.Path, desc: desc})
	}
	pinned.WriteString("</memory_blocks>\n")
	for h := range cc.descs { // forget blobs no longer in HEAD
		if !seen[h] {
			delete(cc.descs, h)
		}
	}
	tree, truncated := renderTree(others, TreeMaxLines, TreeMaxChars, TreeMaxChildren)
	text := pinned.String() + "\n<memory_filesystem>\nThe other memory files (read them with the memory tool's view):\n" + tree + "\n</memory_filesystem>"
	c := Context{Format: FormatMemfsd, Revision: hashString(head), Text: text, Tokens: len(text) / 4, Warnings: []string{}}
	if truncated {
		c.Warnings = append(c.Warnings, "the file tree is over its budget and was cut; reorganise memory into fewer, larger files or folders")
	}
	if c.Tokens > WarnTokens {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the memory context is about %d tokens, over %d: shorten the pinned blocks or move content out of system/", c.Tokens, WarnTokens))
	}
	cc.revision, cc.ctx = head, c
	return c, nil
}

// RenderLetta renders the memory of agent id from the committed HEAD in
// one of letta-code's formats (FormatLettaCode, FormatLettaLocal), byte
// for byte what letta-code 0.32.18 renders for the same tree (package
// letta), cached by revision like memfsd's.
func (cc *Cache) RenderLetta(repo *gitmem.Repo, id, format string) (Context, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cur, err := repo.Head(); err == nil && !cur.IsZero() && cur == cc.lettaRev {
		if c, ok := cc.letta[format]; ok {
			return c, nil
		}
	}
	head, entries, err := repo.HeadFiles()
	if err != nil {
		return Context{}, fmt.Errorf("context %s: %w", id, err)
	}
	// letta-code reads only .md files' bytes; the other paths count for
	// their names (memfs v2's MEMORY.md checks).
	files := make([]letta.File, 0, len(entries))
	for _, e := range entries {
		f := letta.File{Path: e.Path, Link: e.Mode == filemode.Symlink}
		if strings.HasSuffix(e.Path, ".md") {
			if f.Data, err = repo.Blob(e.Blob); err != nil {
				return Context{}, fmt.Errorf("context %s: read %s: %w", id, e.Path, err)
			}
		}
		files = append(files, f)
	}
	var text string
	if format == FormatLettaCode {
		text = letta.Snapshot(files, letta.SnapshotOptions{Tree: letta.TreeLimitsFromEnv(os.Getenv)})
	} else {
		text = letta.LocalProjection(files)
	}
	c := Context{Format: format, Revision: hashString(head), Text: text, Tokens: len(text) / 4, Warnings: []string{}}
	if strings.Contains(text, "\n[Tree truncated: ") {
		c.Warnings = append(c.Warnings, "the file tree is over its budget and was cut; reorganise memory into fewer, larger files or folders")
	}
	if strings.Contains(text, "\n[Memory preview ") {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the pinned memory is over letta-code's %d-character cap and was cut; shorten the pinned files", letta.DefaultMaxChars))
	}
	if c.Tokens > WarnTokens {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the memory context is about %d tokens, over %d: shorten the pinned blocks or move content out of them", c.Tokens, WarnTokens))
	}
	if head != cc.lettaRev || cc.letta == nil {
		cc.lettaRev, cc.letta = head, map[string]Context{}
	}
	cc.letta[format] = c
	return c, nil
}

// hashString is h's hex form, "" for the zero hash.
func hashString(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}
