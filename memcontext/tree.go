package memcontext

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memfsd/memfsd/reminders"
)

type treeFile struct{ path, desc string }

type treeNode struct {
	children map[string]*treeNode
	file     bool
	desc     string
}

// renderTree draws files as letta-code's memory tree: "/memories/" then
// folders before files, each sorted, "├──"/"└──" branches, at most
// maxChildren entries per folder (then "… (N more entries)"), and the whole
// within maxLines and maxChars, ending with a truncation notice when cut.
func renderTree(files []treeFile, maxLines, maxChars, maxChildren int) (string, bool) {
	root := &treeNode{children: map[string]*treeNode{}}
	total := 0
	for _, f := range files {
		n := root
		parts := strings.Split(f.path, "/")
		for i, p := range parts {
			if reminders.BadName(p) {
				p = strconv.Quote(p) // one line, and the agent sees the bytes
			}
			c, ok := n.children[p]
			if !ok {
				c = &treeNode{children: map[string]*treeNode{}}
				n.children[p] = c
				total++
			}
			if i == len(parts)-1 {
				c.file, c.desc = true, f.desc
			}
			n = c
		}
	}
	lines := []string{"/memories/"}
	chars := len(lines[0])
	fits := func(l string) bool { return len(lines)+1 <= maxLines && chars+1+len(l) <= maxChars }
	var render func(n *treeNode, prefix string) bool
	render = func(n *treeNode, prefix string) bool {
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		sort.Slice(names, func(i, j int) bool {
			a, b := n.children[names[i]], n.children[names[j]]
			if a.file != b.file {
				return !a.file
			}
			return names[i] < names[j]
		})
		shown := names
		more := 0
		if len(names) > maxChildren {
			shown, more = names[:maxChildren], len(names)-maxChildren
		}
		for i, name := range shown {
			c := n.children[name]
			last := i == len(shown)-1 && more == 0
			branch, next := "├── ", "│   "
			if last {
				branch, next = "└── ", "    "
			}
			line := prefix + branch + name
			if !c.file {
				line += "/"
			} else if c.desc != "" {
				line += " — " + c.desc
			}
			if !fits(line) {
				return false
			}
			lines = append(lines, line)
			chars += 1 + len(line)
			if !c.file && !render(c, prefix+next) {
				return false
			}
		}
		if more > 0 {
			line := fmt.Sprintf("%s└── … (%d more entries)", prefix, more)
			if !fits(line) {
				return false
			}
			lines = append(lines, line)
			chars += 1 + len(line)
		}
		return true
	}
	if render(root, "") {
		return strings.Join(lines, "\n"), false
	}
	for len(lines) > 1 {
		shown := len(lines) - 1
		notice := fmt.Sprintf("[Tree truncated: showing %d of %d entries. %d omitted.]", shown, total, max(1, total-shown))
		if fits(notice) {
			lines = append(lines, notice)
			break
		}
		chars -= 1 + len(lines[len(lines)-1])
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n"), true
}
