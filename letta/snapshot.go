package letta

import (
	"slices"
	"strings"
)

// The v1 snapshot: src/cli/helpers/reflection-transcript.ts,
// collectParentMemoryFiles, buildParentMemoryTree, buildParentMemorySnapshot.

type memoryFile struct {
	path, content, desc string
	hasDesc             bool
}

// collectFiles is collectParentMemoryFiles: the regular .md files outside
// hidden names, in the walk's order (each folder: folders first, then files,
// each by localeCompare).
func collectFiles(files []File) []memoryFile {
	type dir struct {
		dirs  map[string]*dir
		files map[string]File
	}
	newDir := func() *dir { return &dir{dirs: map[string]*dir{}, files: map[string]File{}} }
	root := newDir()
	for _, f := range files {
		if f.Link || !strings.HasSuffix(f.Path, ".md") || hidden(f.Path) {
			continue // a link is neither a file nor a folder to its walk
		}
		parts := strings.Split(f.Path, "/")
		d := root
		for _, p := range parts[:len(parts)-1] {
			if d.dirs[p] == nil {
				d.dirs[p] = newDir()
			}
			d = d.dirs[p]
		}
		d.files[parts[len(parts)-1]] = f
	}
	var out []memoryFile
	var walk func(d *dir)
	walk = func(d *dir) {
		for _, name := range sortedKeys(d.dirs) {
			walk(d.dirs[name])
		}
		for _, name := range sortedKeys(d.files) {
			f := d.files[name]
			content := DecodeUTF8(f.Data)
			desc, ok := parseFrontMatter(content).description()
			out = append(out, memoryFile{path: f.Path, content: content, desc: desc, hasDesc: ok})
		}
	}
	walk(root)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compare)
	return keys
}

func isSystem(p string) bool { return strings.HasPrefix(p, "system/") }

type treeNode struct {
	children map[string]*treeNode
	isFile   bool
	desc     string
}

// buildTree is buildParentMemoryTree: "/memory/", folders before files,
// descriptions of files outside system/ in parentheses, within the limits.
func buildTree(files []memoryFile, lim TreeLimits) string {
	newNode := func() *treeNode { return &treeNode{children: map[string]*treeNode{}} }
	root := newNode()
	for _, f := range files {
		parts := strings.Split(f.path, "/")
		cur := root
		for i, p := range parts {
			if cur.children[p] == nil {
				cur.children[p] = newNode()
			}
			cur = cur.children[p]
			if i == len(parts)-1 {
				cur.isFile = true
				if f.hasDesc && f.desc != "" && !isSystem(f.path) {
					cur.desc = f.desc
				}
			}
		}
	}
	if root.children["system"] == nil {
		root.children["system"] = newNode()
	}
	sorted := func(n *treeNode) []string {
		names := make([]string, 0, len(n.children))
		for k := range n.children {
			names = append(names, k)
		}
		slices.SortFunc(names, func(a, b string) int {
			if fa, fb := n.children[a].isFile, n.children[b].isFile; fa != fb {
				if fa {
					return 1
				}
				return -1
			}
			return compare(a, b)
		})
		return names
	}
	maxLines := max(2, lim.MaxLines)
	maxChars := max(128, lim.MaxChars)
	maxChildren := max(1, lim.MaxChildrenPerDir)
	out := []string{"/memory/"}
	total := u16len(out[0])
	canAppend := func(line string) bool {
		return len(out)+1 <= maxLines && total+1+u16len(line) <= maxChars
	}
	var count func(n *treeNode) int
	count = func(n *treeNode) int {
		t := 0
		for _, c := range n.children {
			t++
			if len(c.children) > 0 {
				t += count(c)
			}
		}
		return t
	}
	var render func(n *treeNode, prefix string) bool
	render = func(n *treeNode, prefix string) bool {
		names := sorted(n)
		visible := names[:min(len(names), maxChildren)]
		omitted := len(names) - len(visible)
		items := len(visible)
		if omitted > 0 {
			items++
		}
		for i := 0; i < items; i++ {
			last := i == items-1
			branch := "├──"
			if last {
				branch = "└──"
			}
			var line string
			var child *treeNode
			if i < len(visible) {
				child = n.children[visible[i]]
				line = prefix + branch + " " + visible[i]
				if !child.isFile {
					line += "/"
				}
				if child.desc != "" {
					line += " (" + child.desc + ")"
				}
			} else {
				line = prefix + branch + " … (" + localeInt(omitted) + " more entries)"
			}
			if !canAppend(line) {
				return false
			}
			out = append(out, line)
			total += 1 + u16len(line)
			if child != nil && len(child.children) > 0 {
				next := prefix + "│   "
				if last {
					next = prefix + "    "
				}
				if !render(child, next) {
					return false
				}
			}
		}
		return true
	}
	entries := count(root)
	if !render(root, "") {
		for len(out) > 1 {
			shown := len(out) - 1
			notice := "[Tree truncated: showing " + localeInt(shown) + " of " + localeInt(entries) + " entries. " + localeInt(max(1, entries-shown)) + " omitted.]"
			if canAppend(notice) {
				out = append(out, notice)
				break
			}
			total -= 1 + u16len(out[len(out)-1])
			out = out[:len(out)-1]
		}
	}
	return strings.Join(out, "\n")
}

func previewNotice(rel, abs string, truncated bool) string {
	action := "omitted"
	if truncated {
		action = "truncated"
	}
	return "[Memory preview " + action + ": startup context is capped at ~16k estimated tokens. Full file available at " + abs + "; read it directly if needed. Relative path: " + rel + "]"
}

// snapshotV1 is buildParentMemorySnapshot for memfs v1: the tree, then each
// system/ file raw in <memory>, cut or left out at the character cap.
func snapshotV1(files []File, opt SnapshotOptions) string {
	mem := collectFiles(files)
	b := &lines{}
	b.push("<parent_memory>", "<memory_filesystem>", buildTree(mem, opt.Tree), "</memory_filesystem>")
	const end = "</parent_memory>"
	fits := func(add ...string) bool { return b.joinedWith(append(add, end)...) <= opt.MaxChars }
	if len(mem) == 0 {
		b.push("(no memory markdown files found)")
	} else {
		omitted := 0
		for _, f := range mem {
			if !isSystem(f.path) {
				continue
			}
			abs := "$MEMORY_DIR/" + f.path
			prefix := []string{"<memory>", "<path>" + abs + "</path>"}
			if entry := []string{prefix[0], prefix[1], f.content, "</memory>"}; fits(entry...) {
				b.push(entry...)
				continue
			}
			notice := previewNotice(f.path, abs, true)
			if budget := opt.MaxChars - b.joinedWith(prefix[0], prefix[1], "", notice, "</memory>", end); budget > 0 {
				if cut := jsTrimEnd(u16slice(f.content, budget)); cut != "" {
					if entry := []string{prefix[0], prefix[1], cut, notice, "</memory>"}; fits(entry...) {
						b.push(entry...)
						continue
					}
				}
			}
			if entry := []string{prefix[0], prefix[1], previewNotice(f.path, abs, false), "</memory>"}; fits(entry...) {
				b.push(entry...)
			} else {
				omitted++
			}
		}
		if omitted > 0 {
			notice := "[Memory preview omitted " + localeInt(omitted) + " additional system file(s) because the reflection startup context budget was exhausted. Read files directly from $MEMORY_DIR if needed.]"
			if fits(notice) {
				b.push(notice)
			}
		}
	}
	b.push(end)
	return b.String()
}
