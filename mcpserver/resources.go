package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/agent"
)

// URIPrefix starts a memory file's resource URI: memory:///<path>.
const URIPrefix = "memory:///"

// ContextURI is the context resource (memfsd's format); ContextURI +
// "?format=letta-code" and "?format=letta-local" are letta-code's.
const ContextURI = "memfsd://context"

// contextFormats are the context's formats served as resources.
var contextFormats = []string{agent.FormatMemfsd, agent.FormatLettaCode, agent.FormatLettaLocal}

// FileURI is the resource URI of the memory file rel.
func FileURI(rel string) string { return URIPrefix + rel }

func contextURI(format string) string {
	if format == agent.FormatMemfsd {
		return ContextURI
	}
	return ContextURI + "?format=" + format
}

// mimeOf is a memory file's MIME type: by extension, markdown for .md,
// text for what has none.
func mimeOf(rel string) string {
	switch ext := strings.ToLower(path.Ext(rel)); ext {
	case ".md", ".markdown":
		return "text/markdown"
	case "", ".txt":
		return "text/plain"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

// addResources lists files (path → blob) and the context on srv.
func (h *Host) addResources(srv *mcp.Server, files map[string]string) {
	for rel := range files {
		srv.AddResource(h.fileResource(rel), h.readFile)
	}
	for _, f := range contextFormats {
		srv.AddResource(&mcp.Resource{URI: contextURI(f), Name: "memory-context-" + f, Title: "Memory context (" + f + ")",
			Description: "The memory as the agent's prompt shows it (memfsd context --format " + f + ")", MIMEType: "text/plain"}, h.readContext)
	}
}

func (h *Host) fileResource(rel string) *mcp.Resource {
	return &mcp.Resource{URI: FileURI(rel), Name: rel, Title: "/memories/" + rel, MIMEType: mimeOf(rel)}
}

// readFile reads a memory file's resource: its committed version (HEAD).
func (h *Host) readFile(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rel, ok := strings.CutPrefix(uri, URIPrefix)
	if !ok || rel == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	f, err := h.a.FileAt(rel, "")
	if err != nil {
		if errors.Is(err, agent.ErrNoFileAtRef) || errors.Is(err, agent.ErrBadHistoryInput) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, err
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: mimeOf(rel)}
	if f.Encoding == "base64" {
		data, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, err
		}
		c.Blob = data
	} else {
		c.Text = f.Content
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// readContext reads the context resource in its format.
func (h *Host) readContext(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	format := agent.FormatMemfsd
	if _, q, ok := strings.Cut(req.Params.URI, "?format="); ok {
		format = q
	}
	c, err := h.a.ContextAnswer(format)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: c.Text}}}, nil
}

// addPrompt adds the context prompt: the memory as the agent's prompt
// shows it, for a client to pin.
func (h *Host) addPrompt(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{Name: "memory_context", Title: "Memory context",
		Description: "The agent's memory as its prompt shows it: pinned blocks in full, the other files as a tree.",
		Arguments:   []*mcp.PromptArgument{{Name: "format", Description: "memfsd (default), letta-code or letta-local"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			format, err := agent.ParseContextFormat(req.Params.Arguments["format"])
			if err != nil {
				return nil, err
			}
			c, err := h.a.ContextAnswer(format)
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Description: "memory context (" + c.Format + ") at " + c.Revision,
				Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: c.Text}}}}, nil
		})
}

// watchLoop checks HEAD for changed files, at once after a write made
// through MCP, else every PollInterval (a pull, a committed direct write).
func (h *Host) watchLoop() {
	defer h.wg.Done()
	t := time.NewTicker(h.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.changed:
		case <-t.C:
		}
		h.checkChanges()
	}
}

// checkChanges compares HEAD's files with the last check and hands what
// changed to every held server's notifier: new files are added to its
// resources, removed ones taken away, and its sessions subscribed to a
// changed, added or removed file (or to the context) are told. It never
// writes to a client itself: a client that does not read holds its own
// notifier only (until WriteTimeout drops it), never this loop.
func (h *Host) checkChanges() {
	head, list, err := h.a.Files()
	if err != nil {
		return // not cloned yet: the next check
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if head == h.head && h.files != nil {
		return
	}
	prev := h.files
	files := make(map[string]string, len(list))
	for _, f := range list {
		files[f.Path] = f.Blob
	}
	h.files, h.head = files, head
	if prev == nil {
		return // the first look: nothing to compare with
	}
	var uris []string
	var added, changed, removed int
	for p, b := range files {
		old, ok := prev[p]
		switch {
		case !ok:
			added++
		case old != b:
			changed++
		default:
			continue
		}
		uris = append(uris, FileURI(p))
	}
	for p := range prev {
		if _, ok := files[p]; !ok {
			removed++
			uris = append(uris, FileURI(p))
		}
	}
	if len(uris) == 0 {
		return
	}
	for _, f := range contextFormats {
		uris = append(uris, contextURI(f))
	}
	for _, hd := range h.servers {
		hd.queue(uris)
	}
	h.log.Debug("memory files changed", "added", added, "changed", changed, "removed", removed)
}

// held is a server the host keeps in step with the files: how many hold
// it, and its notifier's coalescing queue (the URIs to tell, and a wake-up
// that never blocks the sender), drained by notify.
type held struct {
	n     int
	srv   *mcp.Server
	known map[string]string // the files its resources list (h.files at some check)
	// pending are the URIs to tell, each once however often it changed
	// meanwhile; order is the order first seen. h.mu guards them.
	pending []string
	queued  map[string]bool
	wake    chan struct{} // buffered 1
	stop    chan struct{} // closed at the last release
}

// queue adds uris to the notifier's pending set and wakes it; h.mu is held.
func (hd *held) queue(uris []string) {
	if hd.queued == nil {
		hd.queued = map[string]bool{}
	}
	for _, u := range uris {
		if !hd.queued[u] {
			hd.queued[u] = true
			hd.pending = append(hd.pending, u)
		}
	}
	select {
	case hd.wake <- struct{}{}:
	default:
	}
}

// notify is hd's notifier: on each wake-up its resources are brought to the
// files now and its subscribed sessions told of what is pending. A write
// to a client is bounded by WriteTimeout (a client not reading is dropped).
func (h *Host) notify(hd *held) {
	defer h.wg.Done()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-hd.stop:
			return
		case <-hd.wake:
		}
		h.mu.Lock()
		now, uris := h.files, hd.pending
		hd.pending, hd.queued = nil, nil
		h.mu.Unlock()
		if now != nil {
			h.syncResources(hd, now)
		}
		for _, u := range uris {
			select {
			case <-h.ctx.Done():
				return
			case <-hd.stop:
				return
			default:
			}
			hd.srv.ResourceUpdated(h.ctx, &mcp.ResourceUpdatedNotificationParams{URI: u})
		}
	}
}

// syncResources brings hd's resources from the files it lists to now.
func (h *Host) syncResources(hd *held, now map[string]string) {
	var gone []string
	for p := range hd.known {
		if _, ok := now[p]; !ok {
			gone = append(gone, FileURI(p))
		}
	}
	if len(gone) > 0 {
		hd.srv.RemoveResources(gone...)
	}
	for p := range now {
		if _, ok := hd.known[p]; !ok {
			hd.srv.AddResource(h.fileResource(p), h.readFile)
		}
	}
	hd.known = now
}
