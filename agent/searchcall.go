package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memfsd/memfsd/memtool"
)

// SearchToolCall is the memory_search tool's input, the same on every
// surface (POST /v1/agents/{id}/memory_search, the MCP tool): a query to
// search by, or a folder whose overview (each child with its L0) to show.
type SearchToolCall struct {
	Query  string  `json:"query"`
	Limit  int     `json:"limit"`
	Folder *string `json:"folder"`
}

// DecodeSearchCall reads a memory_search input strictly: one JSON object,
// known fields only, a query or a folder but not both.
func DecodeSearchCall(raw []byte) (SearchToolCall, error) {
	var c SearchToolCall
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return SearchToolCall{}, fmt.Errorf("invalid input: %w", err)
	}
	if dec.More() {
		return SearchToolCall{}, errors.New("invalid input: one JSON object expected")
	}
	if c.Folder != nil && c.Query != "" {
		return SearchToolCall{}, errors.New("invalid input: give a query or a folder, not both")
	}
	return c, nil
}

// RunSearchCall answers a memory_search call on this agent (or shared
// unit): the tool's text in memfsd's context format and the structured
// answer (a SearchResult, or a search.Overview for a folder). A refusal
// for the caller's input is a tool error (IsError), as the memory tool's
// are; other errors are returned.
func (a *Agent) RunSearchCall(c SearchToolCall) (memtool.Result, any, error) {
	if c.Folder != nil {
		o, err := a.Overview(*c.Folder)
		if errors.Is(err, ErrBadSearch) {
			return memtool.Result{Content: err.Error(), IsError: true}, nil, nil
		}
		if err != nil {
			return memtool.Result{}, nil, err
		}
		return memtool.Result{Content: OverviewText(o)}, o, nil
	}
	res, err := a.Search(c.Query, c.Limit)
	if errors.Is(err, ErrBadSearch) {
		return memtool.Result{Content: err.Error(), IsError: true}, nil, nil
	}
	if err != nil {
		return memtool.Result{}, nil, err
	}
	return memtool.Result{Content: SearchText(res)}, res, nil
}
