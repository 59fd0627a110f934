package search

import (
	"fmt"
	"slices"
	"strings"
)

// L0 is a file's abstract (its description, else its first paragraph;
// for a binary file, its kind and size), or a folder's (its counts and
// first names); false when path is neither.
func (ix *Index) L0(p string) (string, bool) {
	if f, ok := ix.paths[p]; ok {
		return f.l0, true
	}
	if fd, ok := ix.dirs[strings.Trim(p, "/")]; ok {
		return folderL0(fd), true
	}
	return "", false
}

// folderL0 is "N files, M folders: a, b, c…".
func folderL0(fd *folder) string {
	names := make([]string, 0, len(fd.folders)+len(fd.files))
	for _, n := range sortedKeys(fd.folders) {
		names = append(names, n+"/")
	}
	names = append(names, sortedKeys(fd.files)...)
	return cut(fmt.Sprintf("%s, %s: %s", count(len(fd.files), "file"), count(len(fd.folders), "folder"), strings.Join(names, ", ")), MaxL0Runes)
}

// Entry is one child in a folder's overview.
type Entry struct {
	Name   string `json:"name"` // a folder's ends in "/"
	Folder bool   `json:"folder"`
	L0     string `json:"l0"`
}

// Overview is a folder's L1: its children, folders first, each in name
// order, with their L0s and counts.
type Overview struct {
	Folder  string  `json:"folder"`
	Files   int     `json:"files"`
	Folders int     `json:"folders"`
	Entries []Entry `json:"entries"`
}

// L1 is the overview of folder d ("" the root); false when there is no
// such folder.
func (ix *Index) L1(d string) (Overview, bool) {
	d = strings.Trim(d, "/")
	fd, ok := ix.dirs[d]
	if !ok {
		return Overview{}, false
	}
	o := Overview{Folder: d, Files: len(fd.files), Folders: len(fd.folders), Entries: []Entry{}}
	for _, n := range sortedKeys(fd.folders) {
		o.Entries = append(o.Entries, Entry{Name: n + "/", Folder: true, L0: folderL0(ix.dirs[join(d, n)])})
	}
	for _, n := range sortedKeys(fd.files) {
		o.Entries = append(o.Entries, Entry{Name: n, L0: ix.paths[join(d, n)].l0})
	}
	return o, true
}

// Text renders the overview as lines: a header with the counts, then one
// "name — L0" line per child.
func (o Overview) Text() string {
	var b strings.Builder
	name := "/" + o.Folder
	fmt.Fprintf(&b, "%s: %s, %s\n", name, count(o.Files, "file"), count(o.Folders, "folder"))
	for _, e := range o.Entries {
		if e.L0 != "" {
			fmt.Fprintf(&b, "- %s — %s\n", e.Name, e.L0)
		} else {
			fmt.Fprintf(&b, "- %s\n", e.Name)
		}
	}
	return b.String()
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Has reports whether p is an indexed file.
func (ix *Index) Has(p string) bool { _, ok := ix.paths[p]; return ok }
