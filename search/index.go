// Package search keeps the tiers of a memory tree — L0, a short abstract
// of each file; L1, an overview of each folder built from its children —
// and a lexical (BM25) search that descends the tree by folder overviews
// and ranks files, with the trail of folders it went through and the
// lines that matched. It is pure: paths and bytes in, answers out; the
// caller says which paths changed and the index updates only those.
package search

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memfsd/memfsd/blocks"
)

// Limits that keep one agent's index bounded.
const (
	// MaxIndexedBytes is how much of a file's body is indexed.
	MaxIndexedBytes = 64 << 10
	// MaxL0Runes is the longest L0 kept.
	MaxL0Runes = 200
)

// Field weights: a word in a file's name counts as this many words of
// its body, one in its L0 as so many.
const (
	weightName = 3
	weightL0   = 2
	weightBody = 1
)

// file is one indexed file.
type file struct {
	l0     string
	size   int
	binary bool
	doc    uint32 // in Index.files
}

// folder is one folder of the tree ("" is the root).
type folder struct {
	files   map[string]bool // child file names
	folders map[string]bool // child folder names
	doc     uint32          // in Index.folders
	indexed bool
	// counts are the folder's L1 as weighted words, kept as children come
	// and go, so re-indexing a folder does not re-read its children.
	counts map[string]int
}

// Index is the tiers and the search index of one tree. It is not safe for
// concurrent use; the caller serialises Update and Search.
type Index struct {
	paths   map[string]*file
	dirs    map[string]*folder
	files   *corpus
	folders *corpus
	byDoc   map[uint32]string // files corpus doc → path
	dirDoc  map[uint32]string // folders corpus doc → folder
}

// New makes an empty index.
func New() *Index {
	return &Index{
		paths: map[string]*file{}, dirs: map[string]*folder{"": newFolder()},
		files: newCorpus(), folders: newCorpus(),
		byDoc: map[uint32]string{}, dirDoc: map[uint32]string{},
	}
}

func newFolder() *folder {
	return &folder{files: map[string]bool{}, folders: map[string]bool{}, counts: map[string]int{}}
}

// addCounts adds (sign 1) or takes away (sign -1) text's words, weighted.
func addCounts(counts map[string]int, text string, weight, sign int) {
	for _, t := range Tokens(text) {
		n, ok := counts[t]
		if !ok {
			t = strings.Clone(t) // not the text it was cut from (corpus.add)
		}
		if n += sign * weight; n <= 0 {
			delete(counts, t)
		} else {
			counts[t] = n
		}
	}
}

// Build indexes a whole tree of path → content.
func Build(tree map[string][]byte) *Index {
	ix := New()
	changed := make([]string, 0, len(tree))
	for p := range tree {
		changed = append(changed, p)
	}
	ix.Update(changed, func(p string) ([]byte, bool) { d, ok := tree[p]; return d, ok })
	return ix
}

// Update re-indexes the paths that changed: read gives a path's new
// content, or false when the path is gone. Only those files and the
// folders above them are touched.
func (ix *Index) Update(changed []string, read func(path string) ([]byte, bool)) {
	touched := map[string]bool{}
	for _, p := range changed {
		data, ok := read(p)
		ix.removeFile(p, touched)
		if ok {
			ix.addFile(p, data, touched)
		}
	}
	// Folders deepest first, so a folder's L0 (its counts) is current when
	// its parent's L1 reads it.
	dirs := make([]string, 0, len(touched))
	for d := range touched {
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b string) int {
		if da, db := depth(a), depth(b); da != db {
			return db - da
		}
		return strings.Compare(a, b)
	})
	for _, d := range dirs {
		ix.reindexFolder(d)
	}
}

// Len is the number of files indexed.
func (ix *Index) Len() int { return len(ix.paths) }

// Bytes estimates the heap the index holds, counted as Go lays it out:
// each map entry with its table's slack (mapEntry), each string's bytes
// and header, each slice's capacity; the words of every folder's L1
// counts too. TestIndex_BytesIsTheHeap holds it within 15% of the heap's
// growth as runtime.MemStats measures it, so the pool's bound is the
// memory it says.
func (ix *Index) Bytes() int {
	n := ix.files.bytes() + ix.folders.bytes()
	n += mapEntry(16+8)*len(ix.paths) + mapEntry(4+16)*len(ix.byDoc) + mapEntry(4+16)*len(ix.dirDoc)
	for p, f := range ix.paths {
		n += strBytes(p) + 48 + strBytes(f.l0)
	}
	n += mapEntry(16+8) * len(ix.dirs)
	for d, f := range ix.dirs {
		n += strBytes(d) + 48 + 3*mapHeader
		n += mapEntry(16+1) * (len(f.files) + len(f.folders))
		n += mapEntry(16+8) * len(f.counts)
		for t := range f.counts {
			n += strBytes(t)
		}
	}
	return n
}

// mapHeader is a map's own header.
const mapHeader = 48

// mapEntry is the heap one map entry of kv key and value bytes takes: a
// slot and its control byte, over the table's load (7/8 at most, half
// that just after it grows: about 2/3 on average).
func mapEntry(kv int) int { return (kv + 1) * 3 / 2 }

// strBytes is a string's bytes as allocated (rounded up to 8) when they
// are its own.
func strBytes(s string) int { return (len(s) + 7) &^ 7 }

func (ix *Index) addFile(p string, data []byte, touched map[string]bool) {
	f := &file{size: len(data)}
	f.binary = isBinary(data)
	var body []byte
	if f.binary {
		f.l0 = fmt.Sprintf("binary file, %s", sizeString(len(data)))
	} else {
		fm := blocks.Parse(data)
		body = fm.Body
		if d, ok := fm.Get("description"); ok && strings.TrimSpace(d) != "" {
			f.l0 = cut(strings.TrimSpace(d), MaxL0Runes)
		} else {
			f.l0 = firstParagraph(body)
		}
		// Its own copy: a one-line L0 is a slice of the file's whole text
		// (16.7 of the 25.4 MiB 872 man pages' index held, in a heap
		// profile).
		f.l0 = strings.Clone(f.l0)
		if len(body) > MaxIndexedBytes {
			body = body[:MaxIndexedBytes]
		}
	}
	counts := map[string]int{}
	for _, t := range Tokens(p) {
		counts[t] += weightName
	}
	for _, t := range Tokens(f.l0) {
		counts[t] += weightL0
	}
	for _, t := range Tokens(string(body)) {
		counts[t] += weightBody
	}
	f.doc = ix.files.add(counts)
	ix.byDoc[f.doc] = p
	ix.paths[p] = f
	// Link the file and its folders up to the root.
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	fd := ix.folder(dir)
	fd.files[name] = true
	addCounts(fd.counts, name, weightName, 1)
	addCounts(fd.counts, f.l0, weightL0, 1)
	touched[dir] = true
	for dir != "" {
		parent, base := path.Split(dir)
		parent = strings.TrimSuffix(parent, "/")
		pd := ix.folder(parent)
		if pd.folders[base] {
			break // the rest of the way up is linked already
		}
		pd.folders[base] = true
		addCounts(pd.counts, base, weightName, 1)
		touched[parent] = true
		dir = parent
	}
}

func (ix *Index) folder(d string) *folder {
	f, ok := ix.dirs[d]
	if !ok {
		f = newFolder()
		addCounts(f.counts, d, weightName, 1)
		ix.dirs[d] = f
	}
	return f
}

func (ix *Index) removeFile(p string, touched map[string]bool) {
	f, ok := ix.paths[p]
	if !ok {
		return
	}
	ix.files.remove(f.doc)
	delete(ix.byDoc, f.doc)
	delete(ix.paths, p)
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	fd := ix.dirs[dir]
	delete(fd.files, name)
	addCounts(fd.counts, name, weightName, -1)
	addCounts(fd.counts, f.l0, weightL0, -1)
	touched[dir] = true
	// Drop folders left empty, up to the root.
	for dir != "" {
		fd := ix.dirs[dir]
		parent, base := path.Split(dir)
		parent = strings.TrimSuffix(parent, "/")
		touched[parent] = true
		if len(fd.files) > 0 || len(fd.folders) > 0 {
			break
		}
		if fd.indexed {
			ix.folders.remove(fd.doc)
			delete(ix.dirDoc, fd.doc)
		}
		delete(ix.dirs, dir)
		delete(ix.dirs[parent].folders, base)
		addCounts(ix.dirs[parent].counts, base, weightName, -1)
		delete(touched, dir)
		dir = parent
	}
}

// reindexFolder rebuilds a folder's L1 document.
func (ix *Index) reindexFolder(d string) {
	fd, ok := ix.dirs[d]
	if !ok {
		return
	}
	if fd.indexed {
		ix.folders.remove(fd.doc)
		delete(ix.dirDoc, fd.doc)
		fd.indexed = false
	}
	if d == "" {
		return // the root is where every search starts; it is not scored
	}
	fd.doc = ix.folders.add(fd.counts)
	fd.indexed = true
	ix.dirDoc[fd.doc] = d
}

// depth is the number of names in a folder path ("" is 0).
func depth(d string) int {
	if d == "" {
		return 0
	}
	return strings.Count(d, "/") + 1
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// isBinary: a NUL byte in the first 8 KiB (git's own test), or text that
// is not UTF-8.
func isBinary(data []byte) bool {
	head := data
	if len(head) > 8000 {
		head = head[:8000]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if len(data) > len(head) { // allow a rune cut at the 8 KiB boundary
		for i := 0; i < 3 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
	}
	return !utf8.Valid(head)
}

// firstParagraph is the body's first paragraph as plain text: leading
// blank lines skipped, lines joined up to the next blank line, markdown
// heading and list marks removed, cut at MaxL0Runes.
func firstParagraph(body []byte) string {
	var words []string
	started := false
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(strings.TrimRight(line, "\r"))
		if line == "" {
			if started {
				break
			}
			continue
		}
		started = true
		line = strings.TrimLeft(line, "#>*-+ \t")
		words = append(words, line)
		if n := len(strings.Join(words, " ")); n > MaxL0Runes*4 {
			break
		}
	}
	return cut(strings.Join(words, " "), MaxL0Runes)
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}

func sizeString(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fK", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	}
}
