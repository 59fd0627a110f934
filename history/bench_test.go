package history_test

import (
	"path/filepath"
	"testing"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/fixture"
)

// BenchmarkHistory_10kCommits: History with limit 20 on a 10,000-commit
// history (500 files, one changed per commit) costs the commits it walks:
// the whole memory stops at 20 commits and a folder (1 in 50 commits)
// within ~1,000; a file, changed every 500 commits, and a path never
// there walk all 10,000 (the worst case).
func BenchmarkHistory_10kCommits(b *testing.B) {
	bare, err := fixture.Bare(fixtureDir(b), 500, 10000)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(b.TempDir(), "memory")
	if err := fixture.CloneCLI(bare, dir); err != nil {
		b.Fatal(err)
	}
	r, err := gitmem.Open(dir, gitmem.Remote{}, gitmem.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for _, tc := range []struct{ name, path string }{
		{"all", ""},
		{"folder", "notes/d07"},
		{"file", fixture.Path(123)},
		{"absent", "notes/none.md"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.History(tc.path, 20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
