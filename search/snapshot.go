package search

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"path"
	"strings"
)

// SnapshotVersion changes whenever what an index holds for the same tree
// changes (the tokenizer, the weights, the L0 rules, this format): a
// snapshot of another version is not loaded.
const SnapshotVersion = 1

// ErrBadSnapshot marks a snapshot that cannot be loaded: another version,
// cut short, or not consistent. The caller treats it as missing.
var ErrBadSnapshot = errors.New("search index snapshot not loadable")

type snapshot struct {
	Version        int
	Files, Folders corpusSnap
	Paths          []fileSnap
	Dirs           []dirSnap
}

type corpusSnap struct {
	Terms     []string // id → term ("" free)
	PostLen   []uint32 // term id → number of postings
	PostDoc   []uint32
	PostTF    []uint16
	DocNTerms []uint32 // doc → number of its terms
	DocTerms  []uint32
	DocLen    []float64
	Free      []uint32
	FreeTerms []uint32
}

type fileSnap struct {
	Path   string
	L0     string
	Size   int
	Binary bool
	Doc    uint32
}

type dirSnap struct {
	Path      string
	Files     []string
	Folders   []string
	Doc       uint32
	Indexed   bool
	CountTerm []string
	CountN    []int
}

// Snapshot encodes the index, to be loaded by LoadSnapshot instead of
// being built again.
func (ix *Index) Snapshot() []byte {
	s := snapshot{Version: SnapshotVersion, Files: ix.files.snap(), Folders: ix.folders.snap()}
	s.Paths = make([]fileSnap, 0, len(ix.paths))
	for p, f := range ix.paths {
		s.Paths = append(s.Paths, fileSnap{p, f.l0, f.size, f.binary, f.doc})
	}
	s.Dirs = make([]dirSnap, 0, len(ix.dirs))
	for d, f := range ix.dirs {
		ds := dirSnap{Path: d, Doc: f.doc, Indexed: f.indexed}
		for n := range f.files {
			ds.Files = append(ds.Files, n)
		}
		for n := range f.folders {
			ds.Folders = append(ds.Folders, n)
		}
		for t, n := range f.counts {
			ds.CountTerm = append(ds.CountTerm, t)
			ds.CountN = append(ds.CountN, n)
		}
		s.Dirs = append(s.Dirs, ds)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&s); err != nil {
		panic(err) // only plain values: cannot fail
	}
	return buf.Bytes()
}

func (c *corpus) snap() corpusSnap {
	s := corpusSnap{Terms: c.terms, DocLen: c.docLen, Free: c.free, FreeTerms: c.freeTerms}
	s.PostLen = make([]uint32, len(c.postings))
	for id, ps := range c.postings {
		s.PostLen[id] = uint32(len(ps))
		for _, p := range ps {
			s.PostDoc = append(s.PostDoc, p.doc)
			s.PostTF = append(s.PostTF, p.tf)
		}
	}
	s.DocNTerms = make([]uint32, len(c.docTerms))
	for d, ids := range c.docTerms {
		s.DocNTerms[d] = uint32(len(ids))
		s.DocTerms = append(s.DocTerms, ids...)
	}
	return s
}

// LoadSnapshot decodes what Snapshot encoded. Its bytes may come from a
// file anyone with the repository could write: everything is checked
// (ranges, the links between files and folders), and anything off is
// ErrBadSnapshot, never a panic.
func LoadSnapshot(data []byte) (ix *Index, err error) {
	defer func() {
		if r := recover(); r != nil {
			ix, err = nil, fmt.Errorf("%w: %v", ErrBadSnapshot, r)
		}
	}()
	var s snapshot
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if s.Version != SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrBadSnapshot, s.Version, SnapshotVersion)
	}
	bad := func(what string) (*Index, error) { return nil, fmt.Errorf("%w: %s", ErrBadSnapshot, what) }
	ix = New()
	if ix.files, err = s.Files.load(); err != nil {
		return nil, err
	}
	if ix.folders, err = s.Folders.load(); err != nil {
		return nil, err
	}
	ix.dirs = make(map[string]*folder, len(s.Dirs))
	for _, d := range s.Dirs {
		if _, dup := ix.dirs[d.Path]; dup || len(d.CountTerm) != len(d.CountN) {
			return bad("folder " + d.Path)
		}
		f := newFolder()
		f.doc, f.indexed = d.Doc, d.Indexed
		for _, n := range d.Files {
			f.files[n] = true
		}
		for _, n := range d.Folders {
			f.folders[n] = true
		}
		for i, t := range d.CountTerm {
			f.counts[t] = d.CountN[i]
		}
		if f.indexed {
			if !ix.folders.holds(f.doc) || ix.dirDoc[f.doc] != "" {
				return bad("folder document of " + d.Path)
			}
			ix.dirDoc[f.doc] = d.Path
		}
		ix.dirs[d.Path] = f
	}
	if ix.dirs[""] == nil || len(ix.dirDoc) != ix.folders.live {
		return bad("folders")
	}
	for _, fs := range s.Paths {
		if _, dup := ix.paths[fs.Path]; dup || !ix.files.holds(fs.Doc) || ix.byDoc[fs.Doc] != "" {
			return bad("file " + fs.Path)
		}
		dir, name := path.Split(fs.Path)
		if fd := ix.dirs[strings.TrimSuffix(dir, "/")]; fd == nil || !fd.files[name] {
			return bad("file " + fs.Path + " not in its folder")
		}
		ix.paths[fs.Path] = &file{l0: fs.L0, size: fs.Size, binary: fs.Binary, doc: fs.Doc}
		ix.byDoc[fs.Doc] = fs.Path
	}
	if len(ix.byDoc) != ix.files.live {
		return bad("files")
	}
	// Every folder's children are there, and every folder but the root
	// is its parent's child.
	for d, f := range ix.dirs {
		for n := range f.files {
			if ix.paths[join(d, n)] == nil {
				return bad("folder " + d + " lists a missing file")
			}
		}
		for n := range f.folders {
			if ix.dirs[join(d, n)] == nil {
				return bad("folder " + d + " lists a missing folder")
			}
		}
		if d != "" {
			parent, base := path.Split(d)
			if p := ix.dirs[strings.TrimSuffix(parent, "/")]; p == nil || !p.folders[base] {
				return bad("folder " + d + " not in its parent")
			}
		}
	}
	return ix, nil
}

// holds reports whether doc is a document in use.
func (c *corpus) holds(doc uint32) bool { return int(doc) < len(c.docLen) && c.docLen[doc] != 0 }

func (s corpusSnap) load() (*corpus, error) {
	bad := func(what string) (*corpus, error) { return nil, fmt.Errorf("%w: corpus %s", ErrBadSnapshot, what) }
	nt, nd := len(s.Terms), len(s.DocLen)
	if len(s.PostLen) != nt || len(s.DocNTerms) != nd || len(s.PostDoc) != len(s.PostTF) {
		return bad("lengths")
	}
	c := &corpus{ids: make(map[string]uint32, nt), terms: s.Terms, docLen: s.DocLen, free: s.Free, freeTerms: s.FreeTerms}
	c.postings = make([][]posting, nt)
	off := 0
	for id, n := range s.PostLen {
		if int(n) > len(s.PostDoc)-off {
			return bad("postings")
		}
		ps := make([]posting, n)
		for i := range ps {
			d := s.PostDoc[off+i]
			if int(d) >= nd || s.DocLen[d] == 0 {
				return bad("posting's document")
			}
			ps[i] = posting{doc: d, tf: s.PostTF[off+i]}
		}
		off += int(n)
		if t := s.Terms[id]; t != "" {
			if _, dup := c.ids[t]; dup || n == 0 {
				return bad("terms")
			}
			c.ids[t] = uint32(id)
			c.postings[id] = ps
		} else if n != 0 {
			return bad("postings of a free term")
		}
	}
	if off != len(s.PostDoc) {
		return bad("postings left over")
	}
	c.docTerms = make([][]uint32, nd)
	off = 0
	for d, n := range s.DocNTerms {
		if int(n) > len(s.DocTerms)-off {
			return bad("document terms")
		}
		ids := s.DocTerms[off : off+int(n) : off+int(n)]
		for _, id := range ids {
			if int(id) >= nt || s.Terms[id] == "" {
				return bad("document's term")
			}
		}
		off += int(n)
		if s.DocLen[d] != 0 {
			c.docTerms[d] = ids
			c.live++
			c.totalLen += s.DocLen[d]
		} else if n != 0 {
			return bad("terms of a free document")
		}
	}
	for _, d := range s.Free {
		if int(d) >= nd || s.DocLen[d] != 0 {
			return bad("free documents")
		}
	}
	for _, id := range s.FreeTerms {
		if int(id) >= nt || s.Terms[id] != "" {
			return bad("free terms")
		}
	}
	if len(s.Free) != nd-c.live {
		return bad("free documents' count")
	}
	return c, nil
}
