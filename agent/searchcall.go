package agent

import (
	"errors"

	"github.com/memfsd/memfsd/memsearch"
	"github.com/memfsd/memfsd/memtool"
)

// SearchToolCall is the memory_search tool's input (memsearch.Call).
type SearchToolCall = memsearch.Call

// DecodeSearchCall reads a memory_search input strictly (memsearch.DecodeCall).
func DecodeSearchCall(raw []byte) (SearchToolCall, error) { return memsearch.DecodeCall(raw) }

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
