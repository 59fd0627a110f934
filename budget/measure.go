package budget

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Where a budget in force comes from.
const (
	FromDefault  = "default"
	FromPolicy   = "policy"   // system/.letta-policy.yml at HEAD
	FromOperator = "operator" // PUT /v1/agents/{id}/budget
)

// Status is the pinned memory's size against its token budget, at HEAD.
type Status struct {
	Tokens int    `json:"tokens"` // estimated as letta-code does
	Limit  int    `json:"limit"`
	Source string `json:"source"` // default, policy or operator
	Layout string `json:"layout"` // memfs-v1 (system/**.md) or memfs-v2 (root .md files)
	// Files are the pinned files, most tokens first.
	Files []FileTokens `json:"files"`
	// Warning says why the policy file was not used, when it is broken.
	Warning string `json:"warning,omitempty"`
}

// Over reports whether the pinned memory is past its budget.
func (b Status) Over() bool { return b.Tokens > b.Limit }

// tokenCache maps blob ids to their estimate: a blob's content, so its
// estimate, never changes, whatever agent holds it.
var tokenCache = struct {
	sync.Mutex
	m map[plumbing.Hash]int
}{m: map[plumbing.Hash]int{}}

func cachedTokens(h plumbing.Hash, read func(plumbing.Hash) ([]byte, error)) (int, error) {
	tokenCache.Lock()
	n, ok := tokenCache.m[h]
	tokenCache.Unlock()
	if ok {
		return n, nil
	}
	data, err := read(h)
	if err != nil {
		return 0, err
	}
	n = Tokens(data)
	tokenCache.Lock()
	if len(tokenCache.m) >= 1<<16 {
		clear(tokenCache.m)
	}
	tokenCache.m[h] = n
	tokenCache.Unlock()
	return n, nil
}

// File is a file as the budget sees it: its blob in a tree, or the bytes
// a write would commit (Data set).
type File struct {
	Blob plumbing.Hash
	Mode filemode.FileMode
	Data []byte
}

// Measure estimates the pinned memory of files (path → file): its tokens,
// its layout and the pinned files.
func Measure(files map[string]File, read func(plumbing.Hash) ([]byte, error)) (int, string, []FileTokens, error) {
	_, v2 := files["MEMORY.md"]
	layout := Layout(v2)
	var rows []FileTokens
	for p, f := range files {
		if f.Mode == filemode.Symlink || f.Mode == filemode.Submodule || !Pinned(p, layout) {
			continue
		}
		n := 0
		if f.Data != nil {
			n = Tokens(f.Data)
		} else {
			var err error
			if n, err = cachedTokens(f.Blob, read); err != nil {
				return 0, layout, nil, err
			}
		}
		rows = append(rows, FileTokens{Path: p, Tokens: n})
	}
	return Sum(rows), layout, rows, nil
}
