package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/retry"
)

// IdempotencyMeta is the _meta key of a tools/call that carries an
// idempotency key (SPEC §8): the call is applied at most once, as the
// API's Idempotency-Key header makes it.
const IdempotencyMeta = "memfsd/idempotency-key"

// session is one MCP session's state: the reminders it has been shown.
type session struct {
	h       *Host
	dialect memtool.Dialect

	mu    sync.Mutex
	shown string // the reminder text last added to a result
}

var (
	yes = true
	no  = false
)

// addTools adds the memory tool(s) of the host's dialect and the read-only
// and sync tools.
func (s *session) addTools(srv *mcp.Server) {
	if s.dialect == memtool.LettaCode {
		srv.AddTool(&mcp.Tool{Name: memtool.LettaMemory, Description: lettaMemoryDescription, InputSchema: json.RawMessage(lettaMemorySchema),
			Annotations: &mcp.ToolAnnotations{Title: "Memory", DestructiveHint: &yes, OpenWorldHint: &no}}, s.memoryHandler(memtool.LettaCode, memtool.LettaMemory))
		srv.AddTool(&mcp.Tool{Name: memtool.LettaApplyPatch, Description: lettaPatchDescription, InputSchema: json.RawMessage(lettaPatchSchema),
			Annotations: &mcp.ToolAnnotations{Title: "Memory patch", DestructiveHint: &yes, OpenWorldHint: &no}}, s.memoryHandler(memtool.LettaCode, memtool.LettaApplyPatch))
	} else {
		srv.AddTool(&mcp.Tool{Name: "memory", Description: memoryDescription, InputSchema: json.RawMessage(memorySchema),
			Annotations: &mcp.ToolAnnotations{Title: "Memory", DestructiveHint: &yes, OpenWorldHint: &no}}, s.memoryHandler(memtool.Anthropic, ""))
	}
	srv.AddTool(&mcp.Tool{Name: "memory_history", Description: "The commits that changed a memory path, newest first (git log of the path).",
		InputSchema: json.RawMessage(historySchema), Annotations: &mcp.ToolAnnotations{Title: "Memory history", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}}, s.historyHandler)
	srv.AddTool(&mcp.Tool{Name: "memory_show", Description: "A memory file as it was at a revision (a commit id from memory_history, HEAD~N, ...).",
		InputSchema: json.RawMessage(showSchema), Annotations: &mcp.ToolAnnotations{Title: "Memory at a revision", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}}, s.showHandler)
	srv.AddTool(&mcp.Tool{Name: "memory_search", Description: searchDescription,
		InputSchema: json.RawMessage(searchSchema), Annotations: &mcp.ToolAnnotations{Title: "Search memory", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}}, s.searchHandler)
	srv.AddTool(&mcp.Tool{Name: "memory_sync", Description: "Push the memory's commits to its remote now (they are pushed anyway after a short idle time).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), Annotations: &mcp.ToolAnnotations{Title: "Sync memory", IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &yes}}, s.syncHandler)
}

// memoryHandler runs a memory-tool call through the agent's pipeline, as
// POST /v1/agents/{id}/memory does: the same decoding, checks and answers.
func (s *session) memoryHandler(dialect memtool.Dialect, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw := req.Params.Arguments
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		in, err := memtool.DecodeCall(raw, dialect, tool)
		if err != nil {
			s.h.touched(false)
			return s.answer(memtool.Result{Content: "invalid input: " + err.Error(), IsError: true}), nil
		}
		key, err := idempotencyKey(req.Params.Meta)
		if err != nil {
			s.h.touched(false)
			return s.answer(memtool.Result{Content: "invalid input: " + err.Error(), IsError: true}), nil
		}
		res, err := s.h.a.RunCall(in, key)
		if err != nil {
			// The agent reads it: host paths as it sees them.
			res = memtool.Result{Content: s.h.a.AgentFacing(err.Error()), IsError: true}
		}
		s.h.touched(!res.IsError && in.Writes())
		return s.answer(res), nil
	}
}

// idempotencyKey is the call's key from _meta, "" when none.
func idempotencyKey(meta mcp.Meta) (string, error) {
	v, ok := meta[IdempotencyMeta]
	if !ok {
		return "", nil
	}
	k, isString := v.(string)
	if !isString {
		return "", fmt.Errorf("_meta %q: want a string", IdempotencyMeta)
	}
	if err := agent.ValidIdempotencyKey(k); err != nil {
		return "", fmt.Errorf("_meta %q: %w", IdempotencyMeta, err)
	}
	return k, nil
}

// answer is a tool result: the tool's text, then the reminders this
// session has not been shown yet (as letta-code adds system reminders).
func (s *session) answer(res memtool.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}
	if text := s.reminders(); text != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: text})
	}
	return out
}

// reminders is the reminder text to add to a result: the agent's
// reminders when they changed since this session last saw them.
func (s *session) reminders() string {
	rs := s.h.a.ToolReminders()
	if s.h.opts.ExtraReminders != nil {
		rs = append(rs, s.h.opts.ExtraReminders()...)
	}
	text := reminders.Text(rs)
	s.mu.Lock()
	defer s.mu.Unlock()
	if text == s.shown {
		return ""
	}
	s.shown = text
	return text
}

// decodeArgs decodes a read-only tool's arguments strictly.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid input: %w", err)
	}
	return nil
}

func (s *session) historyHandler(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.h.touched(false)
	var args struct {
		Path  string `json:"path"`
		Limit *int   `json:"limit"`
	}
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return s.answer(memtool.Result{Content: err.Error(), IsError: true}), nil
	}
	limit := 20
	if args.Limit != nil {
		limit = *args.Limit
	}
	if args.Path == "" {
		args.Path = memtool.Root
	}
	hist, err := s.h.a.History(args.Path, limit)
	if err != nil {
		return s.answer(memtool.Result{Content: s.h.a.AgentFacing(readErr(err)), IsError: true}), nil
	}
	data, _ := json.MarshalIndent(hist, "", "  ")
	out := s.answer(memtool.Result{Content: string(data)})
	out.StructuredContent = hist
	return out, nil
}

func (s *session) showHandler(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.h.touched(false)
	var args struct {
		Path string `json:"path"`
		Rev  string `json:"rev"`
	}
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		return s.answer(memtool.Result{Content: err.Error(), IsError: true}), nil
	}
	if args.Path == "" {
		return s.answer(memtool.Result{Content: "invalid input: path is required", IsError: true}), nil
	}
	f, err := s.h.a.FileAt(args.Path, args.Rev)
	if err != nil {
		return s.answer(memtool.Result{Content: s.h.a.AgentFacing(readErr(err)), IsError: true}), nil
	}
	out := s.answer(memtool.Result{Content: f.Content})
	out.StructuredContent = f
	return out, nil
}

func (s *session) searchHandler(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.h.touched(false)
	c, err := agent.DecodeSearchCall(req.Params.Arguments)
	if err != nil {
		return s.answer(memtool.Result{Content: err.Error(), IsError: true}), nil
	}
	res, structured, err := s.h.a.RunSearchCall(c)
	if err != nil {
		res = memtool.Result{Content: s.h.a.AgentFacing(err.Error()), IsError: true}
	}
	out := s.answer(res)
	if structured != nil {
		out.StructuredContent = structured
	}
	return out, nil
}

func (s *session) syncHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct{}
	if err := decodeArgs(req.Params.Arguments, &args); err != nil {
		s.h.touched(false)
		return s.answer(memtool.Result{Content: err.Error(), IsError: true}), nil
	}
	res := s.h.sync(ctx)
	s.h.touched(false)
	text := fmt.Sprintf("sync: %s, %d commit(s) pushed", res.Outcome, res.Pushed)
	if res.Error != "" {
		text += ": " + s.h.a.AgentFacing(res.Error)
	}
	out := s.answer(memtool.Result{Content: text, IsError: res.Outcome == agent.OutcomeFailed})
	out.StructuredContent = map[string]any{"outcome": res.Outcome, "pushed": res.Pushed, "error": res.Error}
	return out, nil
}

// readErr is the text of a history or show failure.
func readErr(err error) string {
	if errors.Is(err, agent.ErrBadHistoryInput) {
		return "invalid input: " + err.Error()
	}
	if errors.Is(err, agent.ErrStuck) {
		return err.Error() + "\nnext step: " + retry.NextStep(err)
	}
	return err.Error()
}
