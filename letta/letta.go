// Package letta renders a memory tree exactly as letta-code 0.32.18 does
// for its prompts, byte for byte: the parent-memory snapshot
// (buildParentMemorySnapshot, memfs v1 and v2) and the local backend's
// projection (renderMemfsProjection). It knows nothing of git or agents: the
// caller hands it the committed tree's files. scripts/letta-golden.sh renders
// the trees under testdata/letta/ with letta-code's own code; the tests here
// compare.
package letta

import (
	"strconv"
	"strings"
)

// File is one file of the committed tree.
type File struct {
	Path string // slash-separated, relative to the memory root
	// Data is the file's bytes (a link's target for a symbolic link). A
	// renderer reads only the Data of .md files; others may leave it nil.
	Data []byte
	Link bool // a symbolic link
}

// Layout names a memory layout: LayoutV1 (system/ is pinned) or LayoutV2
// (a root MEMORY.md: root .md files are pinned, folders indexed by their
// own MEMORY.md).
type Layout string

// The layouts letta-code knows.
const (
	LayoutV1 Layout = "memfs-v1"
	LayoutV2 Layout = "memfs-v2"
)

// DetectLayout is letta-code's detectMemoryFormat for a git-backed memory:
// memfs v2 when the root holds a MEMORY.md.
func DetectLayout(files []File) Layout {
	for _, f := range files {
		if f.Path == "MEMORY.md" || strings.HasPrefix(f.Path, "MEMORY.md/") {
			return LayoutV2
		}
	}
	return LayoutV1
}

// DefaultMaxChars caps a parent-memory snapshot
// (REFLECTION_PARENT_MEMORY_SNAPSHOT_CHAR_LIMIT; counted in UTF-16 units).
const DefaultMaxChars = 40000

// TreeLimits are letta-code's budgets for the v1 snapshot's tree.
type TreeLimits struct {
	MaxLines          int // LETTA_MEMFS_TREE_MAX_LINES, default 500
	MaxChars          int // LETTA_MEMFS_TREE_MAX_CHARS, default 20,000
	MaxChildrenPerDir int // LETTA_MEMFS_TREE_MAX_CHILDREN_PER_DIR, default 50
}

// DefaultTreeLimits are letta-code's defaults.
var DefaultTreeLimits = TreeLimits{MaxLines: 500, MaxChars: 20000, MaxChildrenPerDir: 50}

// TreeLimitsFromEnv reads the limits as letta-code's getDirectoryLimits does:
// a value that is not an integer in range leaves the default.
func TreeLimitsFromEnv(getenv func(string) string) TreeLimits {
	return TreeLimits{
		MaxLines:          envInt(getenv("LETTA_MEMFS_TREE_MAX_LINES"), DefaultTreeLimits.MaxLines, 2, 50000),
		MaxChars:          envInt(getenv("LETTA_MEMFS_TREE_MAX_CHARS"), DefaultTreeLimits.MaxChars, 128, 5000000),
		MaxChildrenPerDir: envInt(getenv("LETTA_MEMFS_TREE_MAX_CHILDREN_PER_DIR"), DefaultTreeLimits.MaxChildrenPerDir, 1, 5000),
	}
}

// envInt is parsePositiveIntEnv: Number.parseInt's leading integer of the
// trimmed value, kept when within [lo, hi].
func envInt(v string, def, lo, hi int) int {
	v = jsTrim(v)
	end := 0
	if end < len(v) && (v[end] == '+' || v[end] == '-') {
		end++
	}
	digits := end
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	if end == digits {
		return def
	}
	n, err := strconv.Atoi(v[:end])
	if err != nil || n < lo || n > hi { // an overflow is out of range too
		return def
	}
	return n
}

// SnapshotOptions tune a parent-memory snapshot; the zero value is
// letta-code's (its layout detected, 40,000 characters, default tree limits).
type SnapshotOptions struct {
	Layout   Layout // "" detects it
	MaxChars int    // 0: DefaultMaxChars; at least 1,000 as letta-code has it
	Tree     TreeLimits
}

// Snapshot is letta-code's buildParentMemorySnapshot of the tree.
func Snapshot(files []File, opt SnapshotOptions) string {
	if opt.Layout == "" {
		opt.Layout = DetectLayout(files)
	}
	if opt.MaxChars == 0 {
		opt.MaxChars = DefaultMaxChars
	}
	opt.MaxChars = max(1000, opt.MaxChars)
	if opt.Tree == (TreeLimits{}) {
		opt.Tree = DefaultTreeLimits
	}
	if opt.Layout == LayoutV2 {
		return snapshotV2(files, opt.MaxChars)
	}
	return snapshotV1(files, opt)
}

// hidden reports whether a path has a part starting with "." (letta-code's
// walks skip those).
func hidden(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

// lines is a list of output lines and its JavaScript length when joined.
type lines struct {
	l     []string
	units int // sum of the lines' UTF-16 lengths
}

func (b *lines) push(ss ...string) {
	for _, s := range ss {
		b.l = append(b.l, s)
		b.units += u16len(s)
	}
}

// joinedWith is [...lines, ...extra].join("\n").length.
func (b *lines) joinedWith(extra ...string) int {
	n := b.units + len(b.l) + len(extra) - 1
	for _, s := range extra {
		n += u16len(s)
	}
	return n
}

func (b *lines) String() string { return strings.Join(b.l, "\n") }
