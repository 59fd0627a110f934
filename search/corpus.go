package search

import (
	"math"
	"strings"
)

// BM25 parameters: Robertson's k1; b lowered from the usual 0.75 because
// memory notes vary from one line to pages, and the long ones were
// over-penalised (BenchmarkSearchGoDocs: recall@1 at 10k files 65.6% with
// 0.75, 67.6% with 0.5, 69.8% with 0.3 but 1k files lose a point).
const (
	bm25K1 = 1.2
	bm25B  = 0.5
)

// posting is one document's weighted count of a term.
type posting struct {
	doc uint32
	tf  uint16
}

// corpus is a BM25 index over documents given as weighted term counts.
// Postings are compact slices (8 bytes each) rather than maps, so an
// agent's index costs a few bytes per distinct word per file; removing a
// document scans the postings of its own terms only.
type corpus struct {
	ids   map[string]uint32 // term → id
	terms []string          // id → term
	// freeTerms are ids of words no document holds any more, for reuse:
	// the dictionary holds only live words, however long the agent writes.
	freeTerms []uint32
	postings  [][]posting // term id → postings
	docTerms  [][]uint32  // doc → its term ids (to remove it)
	docLen    []float64   // doc → weighted length (0: free slot)
	free      []uint32
	live      int
	totalLen  float64
}

func newCorpus() *corpus { return &corpus{ids: map[string]uint32{}} }

// add stores counts as a new document and returns its id.
func (c *corpus) add(counts map[string]int) uint32 {
	var doc uint32
	if n := len(c.free); n > 0 {
		doc, c.free = c.free[n-1], c.free[:n-1]
	} else {
		doc = uint32(len(c.docLen))
		c.docLen = append(c.docLen, 0)
		c.docTerms = append(c.docTerms, nil)
	}
	ids := make([]uint32, 0, len(counts))
	length := 0.0
	for t, n := range counts {
		id, ok := c.ids[t]
		if !ok {
			// Its own copy: a token is a slice of its file's text, which
			// the dictionary would otherwise keep whole (the heap grew by
			// the files' bodies, not their words: 31.8 MiB for 8.4 MiB of
			// index on 872 man pages).
			t = strings.Clone(t)
			if n := len(c.freeTerms); n > 0 {
				id, c.freeTerms = c.freeTerms[n-1], c.freeTerms[:n-1]
				c.terms[id] = t
			} else {
				id = uint32(len(c.terms))
				c.terms = append(c.terms, t)
				c.postings = append(c.postings, nil)
			}
			c.ids[t] = id
		}
		if n > math.MaxUint16 {
			n = math.MaxUint16
		}
		c.postings[id] = append(c.postings[id], posting{doc: doc, tf: uint16(n)})
		ids = append(ids, id)
		length += float64(n)
	}
	if length == 0 {
		length = 1e-9 // a slot in use, even for a document without words
	}
	c.docTerms[doc], c.docLen[doc] = ids, length
	c.live++
	c.totalLen += length
	return doc
}

// remove drops a document; its id may be reused.
func (c *corpus) remove(doc uint32) {
	for _, id := range c.docTerms[doc] {
		ps := c.postings[id]
		for i := range ps {
			if ps[i].doc == doc {
				ps[i] = ps[len(ps)-1]
				ps = ps[:len(ps)-1]
				break
			}
		}
		if len(ps) == 0 {
			ps = nil
			delete(c.ids, c.terms[id])
			c.terms[id] = ""
			c.freeTerms = append(c.freeTerms, id)
		}
		c.postings[id] = ps
	}
	c.totalLen -= c.docLen[doc]
	c.docTerms[doc], c.docLen[doc] = nil, 0
	c.free = append(c.free, doc)
	c.live--
}

// score returns each document's BM25 score for terms (indexed by doc id)
// and the ids of the documents that scored.
func (c *corpus) score(terms []string) (scores []float64, docs []uint32) {
	if c.live == 0 {
		return nil, nil
	}
	scores = make([]float64, len(c.docLen))
	avg := c.totalLen / float64(c.live)
	for _, t := range terms {
		id, ok := c.ids[t]
		if !ok {
			// Its own copy: a token is a slice of its file's text, which
			// the dictionary would otherwise keep whole (the heap grew by
			// the files' bodies, not their words: 31.8 MiB for 8.4 MiB of
			// index on 872 man pages).
			t = strings.Clone(t)
			continue
		}
		ps := c.postings[id]
		if len(ps) == 0 {
			continue
		}
		n := float64(len(ps))
		idf := math.Log(1 + (float64(c.live)-n+0.5)/(n+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*c.docLen[p.doc]/avg))
			if scores[p.doc] == 0 {
				docs = append(docs, p.doc)
			}
			scores[p.doc] += idf * norm
		}
	}
	return scores, docs
}

// bytes estimates the heap the corpus holds: the dictionary (map entry,
// the word's bytes, its slots in terms and postings), each word's
// postings by capacity, each document's term ids and length.
func (c *corpus) bytes() int {
	n := mapEntry(16+4)*len(c.ids) + cap(c.terms)*16 + cap(c.postings)*24 + cap(c.freeTerms)*4
	for i, t := range c.terms {
		n += strBytes(t) + cap(c.postings[i])*8
	}
	n += cap(c.docTerms)*24 + cap(c.docLen)*8 + cap(c.free)*4
	for _, d := range c.docTerms {
		n += cap(d) * 4
	}
	return n
}
