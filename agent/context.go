package agent

import (
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/memcontext"
)

// Context is the memory as the agent's prompt shows it (package
// memcontext renders it).
type Context = memcontext.Context

// Budgets of the rendered context (memcontext's).
const (
	ContextTreeMaxLines    = memcontext.TreeMaxLines
	ContextTreeMaxChars    = memcontext.TreeMaxChars
	ContextTreeMaxChildren = memcontext.TreeMaxChildren
	ContextWarnTokens      = memcontext.WarnTokens
)

// The context formats: memfsd's own (the default) and letta-code's two.
const (
	FormatMemfsd     = memcontext.FormatMemfsd
	FormatLettaCode  = memcontext.FormatLettaCode
	FormatLettaLocal = memcontext.FormatLettaLocal
)

// ParseContextFormat checks a format name ("" is FormatMemfsd).
func ParseContextFormat(s string) (string, error) { return memcontext.ParseFormat(s) }

// Context renders the memory for the agent's prompt from the committed
// HEAD in memfsd's format (memcontext.Cache.Render).
func (a *Agent) Context() (Context, error) {
	repo := a.repository()
	if repo == nil {
		return Context{}, ErrNotReady
	}
	return a.ctxCache.Render(repo, a.ID)
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
	return a.ctxCache.RenderLetta(repo, a.ID, format)
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
