// Package budget is the token budget of an agent's pinned memory
// (letta-code #3614): which files are pinned, how their tokens are
// estimated (exactly as letta-code estimates them), and the per-repo
// policy file that overrides the default.
package budget

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memfsd/memfsd/letta"
)

// DefaultTokens is the pinned memory's budget when nothing sets one.
const DefaultTokens = 20000

// MaxTokens bounds a budget an operator may set.
const MaxTokens = 10_000_000

// BytesPerToken is letta-code's SYSTEM_PROMPT_BYTES_PER_TOKEN.
const BytesPerToken = 4

// PolicyPath is the per-repo policy file (letta-code #3614), the
// operator's alone: read-only for the agent (blocks.IsReadOnlyPath).
const PolicyPath = "system/.letta-policy.yml"

// Layouts of the memory folder, named as letta-code's detectMemoryFormat.
const (
	LayoutV1 = "memfs-v1" // system/**.md is pinned
	LayoutV2 = "memfs-v2" // a root MEMORY.md: the root .md files are pinned
)

// Tokens estimates a file's tokens as letta-code 0.32.18 does
// (src/agent/system-prompt-size.ts, estimateSystemTokens over
// readFileSync(path, "utf8")): Math.ceil(Buffer.byteLength(text, "utf8") /
// 4). Node decodes the file as UTF-8 first, each maximal invalid
// subsequence becoming U+FFFD (3 bytes), so that is counted here too.
func Tokens(data []byte) int {
	n := decodedLen(data)
	return (n + BytesPerToken - 1) / BytesPerToken
}

// decodedLen is the UTF-8 byte length of data after the WHATWG decoder
// (Node's) replaced each maximal subpart of an ill-formed sequence with
// U+FFFD. Valid input is its own length.
func decodedLen(data []byte) int {
	if utf8.Valid(data) {
		return len(data)
	}
	return len(letta.DecodeUTF8(data))
}

// Layout is the layout of a memory whose files are paths: v2 when a root
// MEMORY.md is there (letta-code's detectMemoryFormat).
func Layout(hasRootMemoryMD bool) string {
	if hasRootMemoryMD {
		return LayoutV2
	}
	return LayoutV1
}

// Pinned reports whether a regular file at path (relative to the memory
// folder) counts in the pinned memory, as letta-code's
// estimateSystemPromptSize chooses them: in v1 every .md file below
// system/ with no part starting with "."; in v2 every root .md file whose
// name does not start with ".". Links are never counted (letta-code reads
// directory entries that are files, not links).
func Pinned(path, layout string) bool {
	if !strings.HasSuffix(path, ".md") {
		return false
	}
	if layout == LayoutV2 {
		return !strings.Contains(path, "/") && !strings.HasPrefix(path, ".")
	}
	rest, ok := strings.CutPrefix(path, "system/")
	if !ok {
		return false
	}
	for part := range strings.SplitSeq(rest, "/") {
		if strings.HasPrefix(part, ".") {
			return false
		}
	}
	return true
}

// FileTokens is one pinned file's estimate.
type FileTokens struct {
	Path   string `json:"path"`
	Tokens int    `json:"tokens"`
}

// Sum totals files, which it sorts most tokens first (then by path).
func Sum(files []FileTokens) int {
	sort.Slice(files, func(i, j int) bool {
		if files[i].Tokens != files[j].Tokens {
			return files[i].Tokens > files[j].Tokens
		}
		return files[i].Path < files[j].Path
	})
	total := 0
	for _, f := range files {
		total += f.Tokens
	}
	return total
}

// ParsePolicy reads the policy file's budget, the top-level key
// `token_budget: N` (a YAML subset: comments, blank lines and other
// top-level keys are passed over). False when the file sets none.
func ParsePolicy(data []byte) (int, bool, error) {
	for i, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimRight(string(line), " \t\r")
		if strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\t") {
			continue // nested under another key
		}
		key, value, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(key) != "token_budget" {
			continue
		}
		if c := strings.Index(value, " #"); c >= 0 {
			value = value[:c]
		}
		value = strings.Trim(strings.TrimSpace(value), `"'`)
		n, err := strconv.Atoi(strings.ReplaceAll(value, "_", ""))
		if err != nil || n < 1 || n > MaxTokens {
			return 0, false, fmt.Errorf("%s line %d: token_budget: %q: want a whole number from 1 to %d", PolicyPath, i+1, value, MaxTokens)
		}
		return n, true, nil
	}
	return 0, false, nil
}
