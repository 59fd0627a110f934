// Package merge3 is git's three-way merge of a text file (diff3, as `git
// merge-file` does it), line by line: the one format in this layer that is
// not a file of .git but the rule a sync applies to two edits of one file.
package merge3

import (
	"bytes"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Merge merges two edits (ours, theirs) of base line by line, as diff3
// does. It returns the merged text and true, or false when both sides
// changed the same lines differently (a true conflict) or either side is
// binary; the caller then keeps both versions whole.
func Merge(base, ours, theirs []byte) ([]byte, bool) {
	switch {
	case bytes.Equal(ours, theirs):
		return ours, true
	case bytes.Equal(base, ours):
		return theirs, true
	case bytes.Equal(base, theirs):
		return ours, true
	case isBinary(base) || isBinary(ours) || isBinary(theirs):
		return nil, false
	}
	b, o, t := splitLines(base), splitLines(ours), splitLines(theirs)
	mo := matchLines(base, ours, len(b))
	mt := matchLines(base, theirs, len(b))
	var out [][]byte
	i, io, it := 0, 0, 0 // positions in base, ours, theirs
	for {
		// Lines aligned in all three copy through.
		for i < len(b) && mo[i] == io && mt[i] == it {
			out = append(out, b[i])
			i, io, it = i+1, io+1, it+1
		}
		// Find the next base line both sides kept: the end of this chunk.
		j := i
		for j < len(b) && (mo[j] < 0 || mt[j] < 0) {
			j++
		}
		eo, et := len(o), len(t)
		if j < len(b) {
			eo, et = mo[j], mt[j]
		}
		cb, co, ct := b[i:j], o[io:eo], t[it:et]
		switch {
		case linesEqual(co, cb):
			out = append(out, ct...)
		case linesEqual(ct, cb), linesEqual(co, ct):
			out = append(out, co...)
		default:
			return nil, false
		}
		i, io, it = j, eo, et
		if i >= len(b) && io >= len(o) && it >= len(t) {
			break
		}
	}
	return bytes.Join(out, nil), true
}

// matchLines maps each line of base to the line of other it is kept as in
// a longest common subsequence, or -1 when it was deleted or changed.
func matchLines(base, other []byte, n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = -1
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = time.Minute
	rb, ro, _ := dmp.DiffLinesToRunes(string(base), string(other))
	i, j := 0, 0
	for _, d := range dmp.DiffMainRunes(rb, ro, false) {
		k := len([]rune(d.Text))
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			for x := 0; x < k; x++ {
				m[i+x] = j + x
			}
			i, j = i+k, j+k
		case diffmatchpatch.DiffDelete:
			i += k
		case diffmatchpatch.DiffInsert:
			j += k
		}
	}
	return m
}

// splitLines splits after each "\n", keeping it; a last line without one
// is a line too.
func splitLines(b []byte) [][]byte {
	var lines [][]byte
	for len(b) > 0 {
		k := bytes.IndexByte(b, '\n')
		if k < 0 {
			lines = append(lines, b)
			break
		}
		lines = append(lines, b[:k+1])
		b = b[k+1:]
	}
	return lines
}

func linesEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// isBinary uses git's rule: a NUL in the first 8000 bytes.
func isBinary(b []byte) bool {
	if len(b) > 8000 {
		b = b[:8000]
	}
	return bytes.IndexByte(b, 0) >= 0
}
