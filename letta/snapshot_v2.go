package letta

import (
	"slices"
	"strings"
)

// The v2 snapshot: src/cli/helpers/reflection-memory-v2.ts and
// src/agent/memory-format.ts (isProjectedMemoryPath, isCoreMemoryPath).

// projectedV2 is isProjectedMemoryPath for memfs v2: outside skills/, and
// every folder above it indexed by its own MEMORY.md.
func projectedV2(p string, all map[string]bool) bool {
	if p == "skills" || strings.HasPrefix(p, "skills/") {
		return false
	}
	parts := strings.Split(p, "/")
	cur := ""
	for _, d := range parts[:len(parts)-1] {
		if cur != "" {
			cur += "/"
		}
		cur += d
		if !all[cur+"/MEMORY.md"] {
			return false
		}
	}
	return true
}

// snapshotV2 is buildMemfsV2ParentMemorySnapshot: the projected tree, then
// each root .md file raw in <memory>, cut at the cap (no notice).
func snapshotV2(files []File, maxChars int) string {
	all := map[string]bool{}
	var projected []File
	for _, f := range files {
		// Its scan follows links (statSync); memfsd renders no link's target.
		if f.Link || hidden(f.Path) {
			continue
		}
		all[f.Path] = true
	}
	for _, f := range files {
		if all[f.Path] && strings.HasSuffix(f.Path, ".md") && projectedV2(f.Path, all) {
			projected = append(projected, f)
		}
	}
	b := &lines{}
	b.push("<parent_memory>", "<memory_filesystem>", projectedTree(projected), "</memory_filesystem>")
	// The scan lists a folder's files after its folders, each by
	// localeCompare; the pinned ones are the root's.
	var core []File
	for _, f := range projected {
		if !strings.Contains(f.Path, "/") {
			core = append(core, f)
		}
	}
	slices.SortFunc(core, func(a, b File) int { return compare(a.Path, b.Path) })
	for _, f := range core {
		prefix := "<memory>\n<path>$MEMORY_DIR/" + f.Path + "</path>\n"
		const suffix = "\n</memory>"
		remaining := maxChars - b.joinedWith() - u16len(prefix) - u16len(suffix) - 20
		if remaining <= 0 {
			break
		}
		b.push(prefix + u16slice(DecodeUTF8(f.Data), remaining) + suffix)
	}
	b.push("</parent_memory>")
	return b.String()
}

// projectedTree is renderProjectedTree: "/memory/", each folder's folders
// then files by localeCompare, every entry "├── ".
func projectedTree(files []File) string {
	type node struct {
		dirs  map[string]*node
		files []string
	}
	root := &node{dirs: map[string]*node{}}
	for _, f := range files {
		parts := strings.Split(f.Path, "/")
		cur := root
		for _, d := range parts[:len(parts)-1] {
			if cur.dirs[d] == nil {
				cur.dirs[d] = &node{dirs: map[string]*node{}}
			}
			cur = cur.dirs[d]
		}
		if name := parts[len(parts)-1]; name != "" {
			cur.files = append(cur.files, name)
		}
	}
	out := []string{"/memory/"}
	var render func(n *node, indent string)
	render = func(n *node, indent string) {
		for _, name := range sortedKeys(n.dirs) {
			out = append(out, indent+"├── "+name+"/")
			render(n.dirs[name], indent+"│   ")
		}
		slices.SortFunc(n.files, compare)
		for _, name := range n.files {
			out = append(out, indent+"├── "+name)
		}
	}
	render(root, "")
	return strings.Join(out, "\n")
}
