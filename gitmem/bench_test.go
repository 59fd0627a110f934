package gitmem_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/sidebyside"
	"github.com/memfsd/memfsd/internal/testgit"
)

// The benchmarks run memfsd and the git CLI side by side, alternating one
// operation each on two identical copies, and report both medians and
// their ratio (memfsd ÷ CLI; below 1 is faster). scripts/bench.sh prints the
// table.

func fixtureDir(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "repos"))
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

func runCLI(tb testing.TB, dir string, args ...string) { testgit.Run(tb, dir, args...) }

var commitSizes = []struct{ files, commits int }{{1000, 10000}, {10000, 2000}}

// BenchmarkCommitWrite: one single-file write committed by CommitWrite vs
// `git add -- path` + `git commit` exec'd per write.
func BenchmarkCommitWrite(b *testing.B) {
	for _, size := range commitSizes {
		for _, nofsync := range []bool{false, true} {
			name := fmt.Sprintf("files=%d/commits=%d/fsync=%t", size.files, size.commits, !nofsync)
			b.Run(name, func(b *testing.B) {
				bare, err := fixture.Bare(fixtureDir(b), size.files, size.commits)
				if err != nil {
					b.Fatal(err)
				}
				tmp := b.TempDir()
				memDir, cliDir := filepath.Join(tmp, "mem"), filepath.Join(tmp, "cli")
				for _, d := range []string{memDir, cliDir} {
					if err := fixture.CloneCLI(bare, d); err != nil {
						b.Fatal(err)
					}
				}
				r, err := gitmem.Open(memDir, gitmem.Remote{}, gitmem.Options{Author: testAuthor, NoSync: nofsync})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { r.Close() })
				var ours, cli []time.Duration
				const warmup = 10 // untimed: page cache, spare files, CLI binaries
				b.ResetTimer()
				for i := -warmup; i < b.N; i++ {
					p := fixture.Path((i + warmup) * 31 % size.files)
					content := fmt.Sprintf("bench write %d\n", i)
					writeFile(b, memDir, p, content)
					writeFile(b, cliDir, p, content)
					t0 := time.Now()
					if _, err := r.CommitWrite([]string{p}, "memory: update "+p); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					runCLI(b, cliDir, "add", "--", p)
					runCLI(b, cliDir, "commit", "-q", "-m", "memory: update "+p)
					t2 := time.Now()
					if i >= 0 {
						ours, cli = append(ours, t1.Sub(t0)), append(cli, t2.Sub(t1))
					}
				}
				b.StopTimer()
				sidebyside.Report(b, ours, cli)
				checkClean(b, memDir)
			})
		}
	}
}

// BenchmarkPush: a one-commit push on histories of different lengths (100
// files, so that only the history grows) vs `git push` to the same git
// http-backend.
func BenchmarkPush(b *testing.B) {
	for _, commits := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("commits=%d", commits), func(b *testing.B) {
			srv := gitserver.New(b, testToken)
			for _, agent := range []string{"mem", "cli"} {
				seedFixture(b, srv, agent, 100, commits)
			}
			r, err := gitmem.Clone(context.Background(), filepath.Join(b.TempDir(), "mem"), remoteFor(srv, "mem"), gitmem.Options{Author: testAuthor})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { r.Close() })
			cliDir := cliClone(b, srv, "cli")
			var ours, cli []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := fixture.Path(i % 100)
				content := fmt.Sprintf("push bench %d\n", i)
				b.StopTimer()
				writeFile(b, r.Dir, p, content)
				writeFile(b, cliDir, p, content)
				if _, err := r.CommitWrite([]string{p}, "memory: update "+p); err != nil {
					b.Fatal(err)
				}
				runCLI(b, cliDir, "commit", "-qam", "memory: update "+p)
				b.StartTimer()
				t0 := time.Now()
				if res, err := r.Push(context.Background()); err != nil || res.Commits != 1 {
					b.Fatalf("push: %+v %v", res, err)
				}
				t1 := time.Now()
				runCLI(b, cliDir, "push", "-q", "origin", "main")
				t2 := time.Now()
				ours, cli = append(ours, t1.Sub(t0)), append(cli, t2.Sub(t1))
			}
			b.StopTimer()
			sidebyside.Report(b, ours, cli)
		})
	}
}

// BenchmarkClone: gitmem.Clone (fetch + checkout, in process) vs `git
// clone`, both over HTTP from the same git http-backend.
func BenchmarkClone(b *testing.B) {
	srv := gitserver.New(b, testToken)
	seedFixture(b, srv, "clone", 1000, 10000)
	var ours, cli []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tmp := b.TempDir()
		t0 := time.Now()
		r, err := gitmem.Clone(context.Background(), filepath.Join(tmp, "mem"), remoteFor(srv, "clone"), gitmem.Options{Author: testAuthor})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		r.Close()
		cliClone(b, srv, "clone")
		t2 := time.Now()
		ours, cli = append(ours, t1.Sub(t0)), append(cli, t2.Sub(t1))
	}
	b.StopTimer()
	sidebyside.Report(b, ours, cli)
}
