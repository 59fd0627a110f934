package letta

import (
	"slices"
	"strings"
)

// The local backend's projection: src/backend/local/system-prompt-compilation.ts
// (collectCommittedMemoryFiles, renderSystemTree, renderExternalProjection,
// renderMemfsProjection).

type localFile struct {
	path, label, value, desc string
}

// gitQuotes reports whether `git ls-tree --name-only` (core.quotePath at its
// default) prints p quoted: a byte under 0x20, 0x7F, '"', '\\', or any byte
// of a non-ASCII character. letta-code's local backend takes the quoted name
// as it comes, which no longer ends in ".md", so such files are left out of
// its projection; memfsd leaves them out too.
func gitQuotes(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7F || c == '"' || c == '\\' || c >= 0x80 {
			return true
		}
	}
	return false
}

// collectLocal is collectCommittedMemoryFiles: every .md path of the tree
// (hidden ones and links too: `git ls-tree -r` and `git show HEAD:path`),
// its front matter's body and trimmed description, sorted by label.
func collectLocal(files []File) []localFile {
	byPath := make(map[string]File, len(files))
	for _, f := range files {
		byPath[f.Path] = f
	}
	var out []localFile
	for _, f := range files {
		if gitQuotes(f.Path) {
			continue
		}
		// It trims each listed name, then shows the trimmed path.
		p := jsTrim(f.Path)
		if p == "" || !strings.HasSuffix(p, ".md") {
			continue
		}
		g, ok := byPath[p]
		if !ok {
			continue // `git show` fails and the file is skipped
		}
		fm := parseFrontMatter(DecodeUTF8(g.Data))
		desc, _ := fm.description()
		out = append(out, localFile{path: p, label: strings.TrimSuffix(p, ".md"), value: fm.body, desc: jsTrim(desc)})
	}
	slices.SortStableFunc(out, func(a, b localFile) int { return compare(a.label, b.label) })
	return out
}

// LocalProjection is letta-code's local backend's renderMemfsProjection: the
// memory as its system prompt shows it ("" when there is no .md file).
func LocalProjection(files []File) string {
	mem := collectLocal(files)
	if len(mem) == 0 {
		return ""
	}
	out := []string{"Reminder: <projection> contains the local path of the memory file projection."}
	var system, external []localFile
	for _, f := range mem {
		switch {
		case f.label == "system/persona":
			out = append(out, "", "<self>", "<projection>$MEMORY_DIR/system/persona.md</projection>", jsTrimEnd(f.value), "</self>")
		case strings.HasPrefix(f.label, "system/"):
			system = append(system, f)
		case !strings.HasPrefix(f.label, "skills/"):
			external = append(external, f)
		}
	}
	if len(system) > 0 || len(external) > 0 {
		out = append(out, "", "<memory>")
		if t := systemTree(system); t != "" {
			out = append(out, t)
		}
		if len(external) > 0 {
			out = append(out, externalProjection(external))
		}
		out = append(out, "</memory>")
	}
	return strings.Join(out, "\n")
}

// systemTree is renderSystemTree: each part of a system/ label an XML tag,
// a file's tag holding its projection path, description and value.
func systemTree(files []localFile) string {
	type node struct {
		children map[string]*node
		leaf     bool
		value    string
		desc     string
	}
	newNode := func() *node { return &node{children: map[string]*node{}} }
	root := newNode()
	for _, f := range files {
		var parts []string
		for _, p := range strings.Split(strings.TrimPrefix(f.label, "system/"), "/") {
			if p != "" {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			continue
		}
		n := root
		for _, p := range parts {
			if n.children[p] == nil {
				n.children[p] = newNode()
			}
			n = n.children[p]
		}
		n.leaf, n.value, n.desc = true, f.value, f.desc
	}
	var out []string
	var render func(n *node, indent int, path []string)
	render = func(n *node, indent int, path []string) {
		pad := strings.Repeat("  ", indent)
		for _, key := range sortedKeys(n.children) {
			c := n.children[key]
			p := append(slices.Clone(path), key)
			out = append(out, pad+"<"+key+">")
			if c.leaf {
				out = append(out, pad+"  <projection>$MEMORY_DIR/system/"+strings.Join(p, "/")+".md</projection>")
				if d := jsTrim(c.desc); d != "" {
					out = append(out, pad+"  <description>"+d+"</description>")
				}
				if v := jsTrimEnd(c.value); v != "" {
					out = append(out, pad+"  "+v)
				}
			}
			render(c, indent+1, p)
			out = append(out, pad+"</"+key+">")
		}
	}
	render(root, 0, nil)
	return strings.Join(out, "\n")
}

// externalProjection is renderExternalProjection: the other files' paths as
// a tree under "${MEMORY_DIR}/", folders first.
func externalProjection(files []localFile) string {
	type node struct{ children map[string]*node }
	root := &node{children: map[string]*node{}}
	for _, f := range files {
		var parts []string
		for _, p := range strings.Split(f.path, "/") {
			if p != "" {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			continue
		}
		n := root
		for _, p := range parts[:len(parts)-1] {
			if c := n.children[p]; c != nil && c.children != nil {
				n = c
			} else {
				c = &node{children: map[string]*node{}}
				n.children[p] = c
				n = c
			}
		}
		n.children[parts[len(parts)-1]] = &node{} // a leaf: no children map
	}
	out := []string{"<external_projection>", "${MEMORY_DIR}/"}
	var render func(n *node, prefix string)
	render = func(n *node, prefix string) {
		names := make([]string, 0, len(n.children))
		for k := range n.children {
			names = append(names, k)
		}
		slices.SortFunc(names, func(a, b string) int {
			if da, db := n.children[a].children != nil, n.children[b].children != nil; da != db {
				if da {
					return -1
				}
				return 1
			}
			return compare(a, b)
		})
		for i, name := range names {
			last := i == len(names)-1
			conn, next := "├── ", "│   "
			if last {
				conn, next = "└── ", "    "
			}
			c := n.children[name]
			if c.children != nil {
				out = append(out, prefix+conn+name+"/")
				render(c, prefix+next)
			} else {
				out = append(out, prefix+conn+name)
			}
		}
	}
	render(root, "")
	out = append(out, "</external_projection>")
	return strings.Join(out, "\n")
}
