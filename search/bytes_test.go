package search_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/memfsd/memfsd/search"
)

// heapNow is the live heap after two collections.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The index's own estimate (Bytes, what the pool's bound counts) is the
// heap it really takes, measured with runtime.MemStats: never under by
// more than 20% (it was under by a third to a half: the pool's 256 MiB
// bound held up to twice what it said), over by at most 25% (a map's
// load depends on where it is in its growth). At 1,000 and 10,000 files
// of Go documentation, and on the files under MEMFSD_BYTES_CORPUS (say,
// rendered man pages) when it is set.
func TestIndex_BytesIsTheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-file index")
	}
	docs := goCorpus(t)
	var trees []map[string][]byte
	for _, n := range []int{1000, 10000} {
		if n > len(docs) {
			continue
		}
		tree := map[string][]byte{}
		for _, d := range docs[:n] {
			tree[d.path] = d.content()
		}
		trees = append(trees, tree)
	}
	if dir := os.Getenv("MEMFSD_BYTES_CORPUS"); dir != "" {
		tree := map[string][]byte{}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				tree[filepath.Base(f)[:1]+"/"+filepath.Base(f)] = b
			}
		}
		trees = append(trees, tree)
	}
	for _, tree := range trees {
		n := len(tree)
		before := heapNow()
		ix := search.Build(tree)
		grown := float64(heapNow() - before)
		est := float64(ix.Bytes())
		runtime.KeepAlive(ix)
		ratio := est / grown
		t.Logf("%d files: Bytes %.1f MiB, heap grew %.1f MiB (%.2f)", n, est/(1<<20), grown/(1<<20), ratio)
		if ratio < 0.8 || ratio > 1.25 {
			t.Errorf("%d files: Bytes %.1f MiB against a heap of %.1f MiB: off by more than the bounds (-20%%, +25%%)", n, est/(1<<20), grown/(1<<20))
		}
	}
}
