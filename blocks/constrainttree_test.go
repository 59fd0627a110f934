package blocks_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/memfsd/memfsd/blocks"
)

// TestTreeConstraints_Incremental: a tree kept up to date one Set or
// Remove at a time reports what a tree built afresh reports.
func TestTreeConstraints_Incremental(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{"MEMORY.md", "a.md", "b.md", "p/MEMORY.md", "p/x.md", "p/q/MEMORY.md", "p/q/y.md", "p/q/r/z.md", "skills/s/SKILL.md", "system/persona.md", "system/a/b/c.md"}
	sizes := []int{10, 19999, 20001, 30000}
	for _, v2 := range []bool{false, true} {
		live := blocks.NewTreeConstraints()
		live.Configure(v2, []byte(`{"version": 1, "maxDepth": 2, "maxFileCharacters": 20000}`), true, true)
		files := map[string][]byte{}
		for step := range 400 {
			p := paths[rng.IntN(len(paths))]
			if rng.IntN(3) == 0 {
				delete(files, p)
				live.Remove(p)
			} else {
				data := []byte(fmt.Sprintf("---\nname: n\ndescription: d%d\n---\n", step))
				if rng.IntN(4) == 0 {
					data = []byte("no front matter")
				}
				data = append(data, make([]byte, sizes[rng.IntN(len(sizes))])...)
				files[p] = data
				live.Set(p, blocks.FactsOf(p, data, true))
			}
			fresh := blocks.NewTreeConstraints()
			for p, data := range files {
				fresh.Set(p, blocks.FactsOf(p, data, true))
			}
			fresh.Configure(v2, []byte(`{"version": 1, "maxDepth": 2, "maxFileCharacters": 20000}`), true, true)
			got, want := live.Report(true, false), fresh.Report(true, false)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("v2 %v step %d: incremental\n%+v\nfresh\n%+v", v2, step, got, want)
			}
		}
	}
}

// TestCountCharacters counts as Node's UTF-8 decoder does: one
// replacement character per maximal ill-formed subpart.
func TestCountCharacters(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		"abc": 3, "é😀": 2, "\uFEFFa": 2,
		"\xe2\x82": 1, "\xe2\x82a": 2, "\xff\xfe": 2, "\xf0\x9f\x98": 1, "\xed\xa0\x80": 3, "\xc0\xaf": 2,
	} {
		if got := blocks.CountCharacters([]byte(in)); got != want {
			t.Errorf("CountCharacters(%q) = %d, want %d", in, got, want)
		}
	}
}
