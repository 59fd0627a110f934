package memtool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Dialect is the argument set a memory-tool call is written in.
type Dialect string

const (
	// Anthropic is Anthropic's memory_20250818: paths under /memories. The
	// default.
	Anthropic Dialect = "anthropic"
	// LettaCode is letta-code's memory and memory_apply_patch tools: paths
	// relative to the memory folder, a required reason.
	LettaCode Dialect = "letta-code"
)

// Tool names of letta-code's dialect.
const (
	LettaMemory     = "memory"
	LettaApplyPatch = "memory_apply_patch"
)

// ParseDialect reads a dialect's name ("" when s is empty).
func ParseDialect(s string) (Dialect, error) {
	switch s {
	case "":
		return "", nil
	case "anthropic", "memory_20250818":
		return Anthropic, nil
	case "letta-code", "letta":
		return LettaCode, nil
	}
	return "", fmt.Errorf("dialect %q: want letta-code or anthropic (memory_20250818)", s)
}

// Call is one tool call in either dialect.
type Call struct {
	Dialect Dialect
	// Input is the call in Anthropic's dialect.
	Input Input
	// Letta is the call in letta-code's dialect.
	Letta LettaArgs
}

// Writes reports whether the call is a write (a view is not).
func (c Call) Writes() bool { return c.Dialect == LettaCode || c.Input.Command != "view" }

// Fingerprint identifies what the call does: its dialect, tool and
// arguments (JSON compacted, so spacing does not count). Two calls with one
// fingerprint make the same change; an idempotency key sent again with
// another fingerprint is a different call.
func (c Call) Fingerprint() string {
	h := sha256.New()
	in, _ := json.Marshal(c.Input)
	fmt.Fprintf(h, "%q\x00%q\x00%d:%s\x00", c.Dialect, c.Letta.Tool, len(in), in)
	for _, f := range c.Letta.fields {
		var raw bytes.Buffer
		if json.Compact(&raw, f.raw) != nil {
			raw.Reset()
			raw.Write(f.raw)
		}
		fmt.Fprintf(h, "%q\x00%d:%s\x00", f.key, raw.Len(), raw.Bytes())
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// LettaArgs is a call of letta-code's memory or memory_apply_patch tool:
// its arguments as sent, in their order (its errors list them so).
type LettaArgs struct {
	// Tool is LettaMemory or LettaApplyPatch.
	Tool   string
	fields []field
}

type field struct {
	key string
	raw json.RawMessage
}

// Fields letta-code's tools take (their schemas, Memory.json and
// MemoryApplyPatch.json in letta-code 0.32.18).
var (
	lettaMemoryFields = []string{"command", "reason", "file_path", "old_path", "new_path", "old_string", "new_string", "insert_line", "insert_text", "description", "file_text"}
	lettaPatchFields  = []string{"reason", "input"}
	// Fields only one dialect has, which tell the dialect of a call that
	// does not name it.
	lettaOnlyFields     = []string{"file_path", "old_string", "new_string", "description", "input"}
	anthropicOnlyFields = []string{"path", "old_str", "new_str", "view_range"}
)

// DecodeCall parses a call of either dialect. dialect and tool (either may
// be empty) come from outside the body (a flag, a query parameter); the
// body may name them too, as "dialect" and "tool", and they must agree.
// Without a name, the dialect is letta-code's when the call uses a field
// only letta-code's tools have (file_path, old_string, new_string,
// description, input), the command update_description, or a rename whose
// old_path is not a /memories path; Anthropic's otherwise. A call mixing
// both dialects' fields is refused.
func DecodeCall(data []byte, dialect Dialect, tool string) (Call, error) {
	fields, err := objectFields(data)
	if err != nil {
		return Call{}, fmt.Errorf("memory tool input: %w", err)
	}
	fields, bodyDialect, err := takeString(fields, "dialect")
	if err != nil {
		return Call{}, err
	}
	fields, bodyTool, err := takeString(fields, "tool")
	if err != nil {
		return Call{}, err
	}
	d, err := ParseDialect(bodyDialect)
	if err != nil {
		return Call{}, fmt.Errorf("memory tool input: field %w", err)
	}
	if dialect != "" && d != "" && dialect != d {
		return Call{}, fmt.Errorf("memory tool input: the body says dialect %s, the request %s; drop one", d, dialect)
	}
	if d == "" {
		d = dialect
	}
	if tool != "" && bodyTool != "" && tool != bodyTool {
		return Call{}, fmt.Errorf("memory tool input: the body says tool %s, the request %s; drop one", bodyTool, tool)
	}
	if tool == "" {
		tool = bodyTool
	}
	switch tool {
	case "", LettaMemory:
	case LettaApplyPatch:
		if d == Anthropic {
			return Call{}, fmt.Errorf("memory tool input: %s is letta-code's tool, not memory_20250818's", tool)
		}
		d = LettaCode
	default:
		return Call{}, fmt.Errorf("memory tool input: tool %q: want %s or %s", tool, LettaMemory, LettaApplyPatch)
	}
	if d == "" {
		if d, err = inferDialect(fields); err != nil {
			return Call{}, err
		}
	}
	if d == Anthropic {
		rest := make(map[string]json.RawMessage, len(fields))
		for _, f := range fields {
			rest[f.key] = f.raw
		}
		body, _ := json.Marshal(rest)
		in, err := Decode(body)
		return Call{Dialect: Anthropic, Input: in}, err
	}
	if tool == "" {
		tool = LettaMemory
		if !has(fields, "command") && has(fields, "input") {
			tool = LettaApplyPatch
		}
	}
	known := lettaMemoryFields
	if tool == LettaApplyPatch {
		known = lettaPatchFields
	}
	for _, f := range fields {
		if !slices.Contains(known, f.key) {
			return Call{}, fmt.Errorf("memory tool input: unknown field %q for letta-code's %s tool (it takes %s)", f.key, tool, strings.Join(known, ", "))
		}
	}
	return Call{Dialect: LettaCode, Letta: LettaArgs{Tool: tool, fields: fields}}, nil
}

// inferDialect tells the dialect of a call that does not name it.
func inferDialect(fields []field) (Dialect, error) {
	var letta, anthropic []string
	for _, f := range fields {
		if slices.Contains(lettaOnlyFields, f.key) {
			letta = append(letta, f.key)
		}
		if slices.Contains(anthropicOnlyFields, f.key) {
			anthropic = append(anthropic, f.key)
		}
	}
	var command, oldPath string
	for _, f := range fields {
		switch f.key {
		case "command":
			json.Unmarshal(f.raw, &command)
		case "old_path":
			json.Unmarshal(f.raw, &oldPath)
		}
	}
	switch command {
	case "update_description":
		letta = append(letta, "command update_description")
	case "view":
		anthropic = append(anthropic, "command view")
	case "rename":
		if oldPath != "" && oldPath != Root && !strings.HasPrefix(oldPath, Root+"/") {
			letta = append(letta, "old_path outside /memories")
		}
	}
	switch {
	case len(letta) > 0 && len(anthropic) > 0:
		return "", fmt.Errorf("memory tool input: mixes letta-code's fields (%s) with memory_20250818's (%s); send \"dialect\": \"letta-code\" or \"anthropic\"",
			strings.Join(letta, ", "), strings.Join(anthropic, ", "))
	case len(letta) > 0:
		return LettaCode, nil
	}
	return Anthropic, nil
}

// objectFields reads a JSON object's fields in the order sent; a repeated
// key keeps its first place and its last value, as JavaScript's JSON.parse
// does.
func objectFields(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("want a JSON object, got %v", tok)
	}
	var fields []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // an object's next token is its key
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
		if i := slices.IndexFunc(fields, func(f field) bool { return f.key == key }); i >= 0 {
			fields[i].raw = raw
			continue
		}
		fields = append(fields, field{key, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("data after the JSON object")
	}
	return fields, nil
}

// takeString removes the field key (a string) from fields.
func takeString(fields []field, key string) ([]field, string, error) {
	i := slices.IndexFunc(fields, func(f field) bool { return f.key == key })
	if i < 0 {
		return fields, "", nil
	}
	var s string
	if err := json.Unmarshal(fields[i].raw, &s); err != nil {
		return nil, "", fmt.Errorf("memory tool input: field %q: want a string", key)
	}
	return slices.Delete(slices.Clone(fields), i, i+1), s, nil
}

func has(fields []field, key string) bool {
	return slices.ContainsFunc(fields, func(f field) bool { return f.key == key })
}
