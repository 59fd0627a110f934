package agent

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/letta"
)

// The context formats: memfsd's own (the default) and letta-code's two.
const (
	FormatMemfsd     = "memfsd"      // Context: /memories/ paths, as the memory tool names them
	FormatLettaCode  = "letta-code"  // letta-code's parent-memory snapshot (memfs v1 or v2)
	FormatLettaLocal = "letta-local" // letta-code's local backend's projection
)

// ParseContextFormat checks a format name ("" is FormatMemfsd).
func ParseContextFormat(s string) (string, error) {
	switch s {
	case "", FormatMemfsd:
		return FormatMemfsd, nil
	case FormatLettaCode, FormatLettaLocal:
		return s, nil
	}
	return "", fmt.Errorf("unknown context format %q: use %s, %s or %s", s, FormatMemfsd, FormatLettaCode, FormatLettaLocal)
}

// ContextAs renders the memory from the committed HEAD in a format of
// ParseContextFormat's. letta-code's formats are byte for byte what
// letta-code 0.32.18 renders for the same tree (package letta); they are
// cached by revision like memfsd's.
func (a *Agent) ContextAs(format string) (Context, error) {
	format, err := ParseContextFormat(format)
	if err != nil {
		return Context{}, err
	}
	if format == FormatMemfsd {
		c, err := a.Context()
		if err == nil && a.SharedRender != nil {
			// After the agent's own memory: its shared repositories
			// (letta-code's renderings leave them out, as letta-code does).
			if extra := a.SharedRender(); extra != "" {
				c.Text += extra
				c.Tokens = len(c.Text) / 4
			}
		}
		return c, err
	}
	repo := a.repository()
	if repo == nil {
		return Context{}, ErrNotReady
	}
	a.ctxMu.Lock()
	defer a.ctxMu.Unlock()
	if cur, err := repo.Head(); err == nil && !cur.IsZero() && cur == a.ctxCache.lettaRev {
		if c, ok := a.ctxCache.letta[format]; ok {
			return c, nil
		}
	}
	head, entries, err := repo.HeadFiles()
	if err != nil {
		return Context{}, fmt.Errorf("context %s: %w", a.ID, err)
	}
	// letta-code reads only .md files' bytes; the other paths count for
	// their names (memfs v2's MEMORY.md checks).
	files := make([]letta.File, 0, len(entries))
	for _, e := range entries {
		f := letta.File{Path: e.Path, Link: e.Mode == filemode.Symlink}
		if strings.HasSuffix(e.Path, ".md") {
			if f.Data, err = repo.Blob(e.Blob); err != nil {
				return Context{}, fmt.Errorf("context %s: read %s: %w", a.ID, e.Path, err)
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
	if c.Tokens > ContextWarnTokens {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the memory context is about %d tokens, over %d: shorten the pinned blocks or move content out of them", c.Tokens, ContextWarnTokens))
	}
	if head != a.ctxCache.lettaRev || a.ctxCache.letta == nil {
		a.ctxCache.lettaRev, a.ctxCache.letta = head, map[string]Context{}
	}
	a.ctxCache.letta[format] = c
	return c, nil
}
