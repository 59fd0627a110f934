package letta

import (
	"fmt"
	"testing"
)

// BenchmarkSnapshot_10000 renders a 10,000-file v1 memory (40 folders of
// 250 files), the shape of agent's TestContext_BudgetsAndCache.
func BenchmarkSnapshot_10000(b *testing.B) {
	files := make([]File, 10000)
	for i := range files {
		files[i] = File{Path: fmt.Sprintf("d%02d/f%05d.md", i%40, i), Data: []byte(fmt.Sprintf("---\ndescription: note %d\n---\nbody %d\n", i, i))}
	}
	b.ReportAllocs()
	for b.Loop() {
		Snapshot(files, SnapshotOptions{})
	}
}
