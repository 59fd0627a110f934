package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/fixture"
	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/sidebyside"
)

// These benchmarks run the built daemon and the git CLI side by side,
// alternating one operation each, and report both medians and the ratio
// (memfsd ÷ CLI). scripts/bench.sh prints the table.

func benchFixture(b *testing.B, files, commits int) string {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "repos"))
	bare, err := fixture.Bare(dir, files, commits)
	if err != nil {
		b.Fatal(err)
	}
	return bare
}

func seedAgent(b *testing.B, srv *gitserver.Server, bare, id string) {
	dst := filepath.Join(srv.Root, "v1", "git", id, "state.git")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if out, err := exec.Command("cp", "-r", bare, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
}

func cli(b *testing.B, dir string, args ...string) {
	if out, err := gitTry(dir, args...); err != nil {
		b.Fatalf("git %v: %v %s", args, err, out)
	}
}

// BenchmarkAPIWrite: a memory write end to end through the API (create a
// file, committed) vs the letta-code way: write, then `git add -A -- path`,
// `git status --porcelain -- path`, `git commit` exec'd.
// BenchmarkTurn adds the push: memory write + turn vs write + the three
// execs + `git push` to the same git http-backend.
func BenchmarkAPIWrite(b *testing.B) { benchWrites(b, false) }

func BenchmarkTurn(b *testing.B) { benchWrites(b, true) }

func benchWrites(b *testing.B, push bool) {
	for _, size := range []struct{ files, commits int }{{1000, 10000}, {10000, 2000}} {
		b.Run(fmt.Sprintf("files=%d/commits=%d", size.files, size.commits), func(b *testing.B) {
			bare := benchFixture(b, size.files, size.commits)
			srv := gitserver.New(b, token)
			seedAgent(b, srv, bare, "bench")
			seedAgent(b, srv, bare, "cli")
			home := b.TempDir()
			p := startDaemon(b, srv, home, "--agent", "bench", "--log-level", "warn")
			cliDir := filepath.Join(b.TempDir(), "cli")
			if out, err := gitTry(filepath.Dir(cliDir), "clone", "-q", "http://memfsd:"+token+"@"+srv.URL[len("http://"):]+"/v1/git/cli/state.git", cliDir); err != nil {
				b.Fatalf("clone: %v %s", err, out)
			}
			var ours, theirs []time.Duration
			const warmup = 5
			b.ResetTimer()
			for i := -warmup; i < b.N; i++ {
				rel := fmt.Sprintf("bench/w%05d.md", i+warmup)
				text := fmt.Sprintf("benchmark write %d\n", i)
				t0 := time.Now()
				var res struct {
					IsError bool `json:"is_error"`
				}
				code, err := p.call("POST", "/v1/agents/bench/memory",
					fmt.Sprintf(`{"command":"create","path":"/memories/%s","file_text":%q}`, rel, text), &res)
				if err != nil || code != 200 || res.IsError {
					b.Fatalf("memory write: %d %v %+v", code, err, res)
				}
				if push {
					if tr := p.turn("bench"); tr.Outcome != "pushed" {
						b.Fatalf("turn: %+v", tr)
					}
				}
				t1 := time.Now()
				abs := filepath.Join(cliDir, rel)
				os.MkdirAll(filepath.Dir(abs), 0o755)
				os.WriteFile(abs, []byte(text), 0o644)
				cli(b, cliDir, "add", "-A", "--", rel)
				cli(b, cliDir, "status", "--porcelain", "--", rel)
				cli(b, cliDir, "commit", "-q", "-m", "memory: create "+rel)
				if push {
					cli(b, cliDir, "push", "-q", "origin", "main")
				}
				t2 := time.Now()
				if i >= 0 {
					ours, theirs = append(ours, t1.Sub(t0)), append(theirs, t2.Sub(t1))
				}
			}
			b.StopTimer()
			sidebyside.Report(b, ours, theirs)
		})
	}
}
