package search_test

import (
	"math/rand"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/memfsd/memfsd/search"
)

// BenchmarkSearchGoDocs measures search on the Go toolchain's doc
// comments at 1,000 and 10,000 files: recall@1/@5 of queries written from
// each document's body against a file-name-only baseline, query latency
// p50/p99, index memory, build time and the cost of re-indexing one
// written file. One iteration is the whole measurement (-benchtime 1x).
func BenchmarkSearchGoDocs(b *testing.B) {
	all := goCorpus(b)
	for _, n := range []int{1000, 10000} {
		if n > len(all) {
			n = len(all)
		}
		docs := all[:n]
		b.Run("files="+itoa(n), func(b *testing.B) {
			tree := make(map[string][]byte, n)
			paths := make([]string, 0, n)
			for _, d := range docs {
				tree[d.path] = d.content()
				paths = append(paths, d.path)
			}
			slices.Sort(paths)
			read := func(p string) ([]byte, bool) { d, ok := tree[p]; return d, ok }
			for b.Loop() {
				// Build, with the heap it adds.
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				start := time.Now()
				ix := search.Build(tree)
				build := time.Since(start)
				runtime.GC()
				runtime.ReadMemStats(&m1)
				heap := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)

				// Queries from bodies: recall and latency.
				rng := rand.New(rand.NewSource(42))
				var lat []time.Duration
				var q, hit1, hit5, base1, base5 int
				for _, d := range docs {
					query, ok := queryFor(d, rng)
					if !ok || q >= 500 {
						continue
					}
					q++
					t0 := time.Now()
					hits, err := ix.Search(query, 5, read)
					lat = append(lat, time.Since(t0))
					if err != nil {
						b.Fatalf("%q: %v", query, err)
					}
					for i, h := range hits {
						if h.Path == d.path {
							hit5++
							if i == 0 {
								hit1++
							}
						}
					}
					bl := nameBaseline(paths, query)
					if i := slices.Index(bl, d.path); i >= 0 {
						base5++
						if i == 0 {
							base1++
						}
					}
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })

				// One write: re-index a changed file (what the next search
				// after a commit pays), averaged over 200 writes.
				wrng := rand.New(rand.NewSource(7))
				start = time.Now()
				const writes = 200
				for i := 0; i < writes; i++ {
					p := docs[wrng.Intn(len(docs))].path
					tree[p] = append(tree[p], " edited line"...)
					ix.Update([]string{p}, read)
				}
				write := time.Since(start) / writes

				b.ReportMetric(float64(q), "queries")
				b.ReportMetric(100*float64(hit1)/float64(q), "recall@1-%")
				b.ReportMetric(100*float64(hit5)/float64(q), "recall@5-%")
				b.ReportMetric(100*float64(base1)/float64(q), "names@1-%")
				b.ReportMetric(100*float64(base5)/float64(q), "names@5-%")
				b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
				b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
				b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(ix.Bytes())/(1<<20), "est-MiB")
				b.ReportMetric(ms(build), "build-ms")
				b.ReportMetric(ms(write), "write-ms")
				b.Logf("%s", describeCorpus(docs))
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func itoa(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return itoaSmall(n/1000) + "k"
	}
	return itoaSmall(n)
}

func itoaSmall(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}

// BenchmarkSearchAgents measures 1,000 agents' indexes of the default
// blocks (what a daemon holds when every agent searched once): heap per
// agent and time to build them all.
func BenchmarkSearchAgents(b *testing.B) {
	tree := map[string][]byte{
		"system/persona.md": []byte("---\ndescription: Who the agent is and how it behaves.\n---\nI am a helpful assistant with memory.\n"),
		"system/human.md":   []byte("---\ndescription: What the agent knows about the person it works with.\n---\nNothing is known about the human yet.\n"),
	}
	for b.Loop() {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		keep := make([]*search.Index, 1000)
		for i := range keep {
			keep[i] = search.Build(tree)
		}
		el := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/1000/1024, "KiB/agent")
		b.ReportMetric(ms(el), "ms/1000-agents")
		runtime.KeepAlive(keep)
	}
}
