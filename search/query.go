package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Query limits.
const (
	// MaxQueryBytes is the longest query accepted.
	MaxQueryBytes = 1000
	// MaxLimit is the most hits one search returns.
	MaxLimit = 100
	// DefaultLimit is the hits returned when the caller names none.
	DefaultLimit = 10
	// MaxLinesPerHit is the most matched lines shown per hit.
	MaxLinesPerHit = 5
	// MaxLineRunes is where a matched line is cut.
	MaxLineRunes = 200
)

// folderWeight is how much the folders' overviews add to a file's score
// on the way down: a file's score is its own BM25 score times
// 1 + folderWeight × the mean of its folders' normalised scores, so a
// file in folders about the query ranks above an equal file elsewhere,
// and no file with a match is ever lost to a folder without one (the
// zero-result searches OpenViking's pruning descent gives). It is small
// because, measured on queries written from file bodies
// (BenchmarkSearchGoDocs, 10k files), a larger lift costs recall: @1 is
// 65.6% at 0, 63.0% at 0.2, 59.6% at 0.5; overviews hold names and
// descriptions, not bodies.
const folderWeight = 0.1

// Errors of a bad query; the caller shows them as they are.
var (
	ErrEmptyQuery   = errors.New("the query is empty: give one or more words to search for")
	ErrQueryTooLong = fmt.Errorf("the query is over %d bytes: use a few words", MaxQueryBytes)
	ErrQueryUTF8    = errors.New("the query is not valid UTF-8")
	ErrNoWords      = errors.New("the query has no words to search for (only punctuation or very common words)")
)

// Step is one folder on a hit's way down, with its overview's score
// (BM25 over the folder's L1, 0 when it does not match).
type Step struct {
	Folder string  `json:"folder"`
	Score  float64 `json:"score"`
}

// Line is a line of the file that holds a word of the query.
type Line struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Hit is one file found.
type Hit struct {
	Path  string  `json:"path"`
	Score float64 `json:"score"`
	L0    string  `json:"l0"`
	Trail []Step  `json:"trail"`
	Lines []Line  `json:"lines"`
}

// CheckQuery validates a query and returns its terms.
func CheckQuery(q string) ([]string, error) {
	switch {
	case strings.TrimSpace(q) == "":
		return nil, ErrEmptyQuery
	case len(q) > MaxQueryBytes:
		return nil, ErrQueryTooLong
	case !utf8.ValidString(q):
		return nil, ErrQueryUTF8
	}
	terms := Tokens(q)
	if len(terms) == 0 {
		return nil, ErrNoWords
	}
	slices.Sort(terms)
	return slices.Compact(terms), nil
}

// Search finds the files best matching q, at most limit (0: DefaultLimit).
// read, when not nil, gives a hit's content for its matched lines.
func (ix *Index) Search(q string, limit int, read func(path string) ([]byte, bool)) ([]Hit, error) {
	terms, err := CheckQuery(q)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	// Folders by their overviews, normalised to the best folder.
	dirScores, dirDocs := ix.folders.score(terms)
	best := 0.0
	for _, d := range dirDocs {
		best = max(best, dirScores[d])
	}
	dirScore := func(d string) (raw, norm float64) {
		fd := ix.dirs[d]
		if fd == nil || !fd.indexed {
			return 0, 0
		}
		raw = dirScores[fd.doc]
		if best > 0 {
			norm = raw / best
		}
		return raw, norm
	}
	// The lift of the folders above a file, once per folder.
	lifts := map[string]float64{}
	lift := func(p string) float64 {
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return 1
		}
		d := p[:i]
		if l, ok := lifts[d]; ok {
			return l
		}
		anc := ancestors(p)
		sum := 0.0
		for _, a := range anc {
			_, norm := dirScore(a)
			sum += norm
		}
		l := 1 + folderWeight*sum/float64(len(anc))
		lifts[d] = l
		return l
	}
	// Files by name, L0 and content, lifted by the folders above them;
	// the best limit kept (ties in path order).
	type cand struct {
		path  string
		score float64
	}
	better := func(a, b cand) bool { return a.score > b.score || a.score == b.score && a.path < b.path }
	fileScores, fileDocs := ix.files.score(terms)
	top := make([]cand, 0, limit+1)
	for _, doc := range fileDocs {
		p := ix.byDoc[doc]
		c := cand{p, fileScores[doc] * lift(p)}
		if len(top) == limit && !better(c, top[limit-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, c, func(x, y cand) int {
			if better(x, y) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, c)
		if len(top) > limit {
			top = top[:limit]
		}
	}
	hits := make([]Hit, 0, len(top))
	for _, c := range top {
		trail := []Step{}
		for _, d := range ancestors(c.path) {
			raw, _ := dirScore(d)
			trail = append(trail, Step{Folder: d, Score: round(raw)})
		}
		hits = append(hits, Hit{Path: c.path, Score: c.score, L0: ix.paths[c.path].l0, Trail: trail})
	}
	for i := range hits {
		hits[i].Score = round(hits[i].Score)
		hits[i].Lines = []Line{}
		if read != nil && !ix.paths[hits[i].Path].binary {
			if data, ok := read(hits[i].Path); ok {
				hits[i].Lines = matchLines(data, terms)
			}
		}
	}
	return hits, nil
}

// ancestors are the folders from the root's child down to p's folder.
func ancestors(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// matchLines are the first lines of data holding a query term.
func matchLines(data []byte, terms []string) []Line {
	// A cheap substring test first: a line holds a term's stem as text
	// before it can hold the term as a word ("library" for "libraries").
	stems := make([]string, len(terms))
	for i, t := range terms {
		stems[i] = strings.TrimSuffix(t, "y")
	}
	out := []Line{}
	for i, line := range strings.Split(string(data), "\n") {
		lower := strings.ToLower(line)
		if !slices.ContainsFunc(stems, func(s string) bool { return strings.Contains(lower, s) }) {
			continue
		}
		for _, t := range Tokens(line) {
			if _, ok := slices.BinarySearch(terms, t); ok {
				text := strings.ToValidUTF8(strings.TrimRight(line, "\r"), "\uFFFD")
				out = append(out, Line{Line: i + 1, Text: cut(text, MaxLineRunes)})
				break
			}
		}
		if len(out) == MaxLinesPerHit {
			break
		}
	}
	return out
}

func round(f float64) float64 { return math.Round(f*1000) / 1000 }
