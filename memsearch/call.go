package memsearch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Call is the memory_search tool's input, the same on every
// surface (POST /v1/agents/{id}/memory_search, the MCP tool): a query to
// search by, or a folder whose overview (each child with its L0) to show.
type Call struct {
	Query  string  `json:"query"`
	Limit  int     `json:"limit"`
	Folder *string `json:"folder"`
}

// DecodeCall reads a memory_search input strictly: one JSON object,
// known fields only, a query or a folder but not both.
func DecodeCall(raw []byte) (Call, error) {
	var c Call
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Call{}, fmt.Errorf("invalid input: %w", err)
	}
	if dec.More() {
		return Call{}, errors.New("invalid input: one JSON object expected")
	}
	if c.Folder != nil && c.Query != "" {
		return Call{}, errors.New("invalid input: give a query or a folder, not both")
	}
	return c, nil
}
