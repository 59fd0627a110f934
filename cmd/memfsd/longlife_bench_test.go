package main_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/sidebyside"
)

// BenchmarkLongLife: W memory writes (env W, default 10,000) through the API to
// one agent, no turns: after 200 files are created (not counted), each
// write inserts a line into one of them, in turn. It reports the median of the first 100 writes and of the last 100
// (flat means their ratio stays near 1), and the size of .git (and of its
// objects alone) against a copy of it after `git gc --aggressive`. The
// repack loop packs in the background as the writes go; the benchmark
// waits for it to settle before measuring sizes.
func BenchmarkLongLife(b *testing.B) {
	writes := 10000
	if v, err := strconv.Atoi(os.Getenv("W")); err == nil && v >= 400 {
		writes = v
	}
	for i := 0; i < b.N; i++ {
		srv := gitserver.New(b, token)
		home := b.TempDir()
		p := startDaemon(b, srv, home, "--agent", "life", "--log-level", "info")
		dir := memDir(home, "life")
		took := make([]time.Duration, 0, writes)
		for w := -200; w < writes; w++ {
			f := (w + 200) % 200
			file := fmt.Sprintf("/memories/notes/d%d/n%03d.md", f%10, f)
			body := fmt.Sprintf(`{"command":"create","path":%q,"file_text":"note %d\n"}`, file, f)
			if w >= 0 {
				body = fmt.Sprintf(`{"command":"insert","path":%q,"insert_line":0,"insert_text":"entry %d: the agent learned something worth keeping\n"}`, file, w)
			}
			var res struct {
				IsError bool   `json:"is_error"`
				Content string `json:"content"`
			}
			t0 := time.Now()
			if code, err := p.call("POST", "/v1/agents/life/memory", body, &res); err != nil || code != 200 || res.IsError {
				b.Fatalf("write %d: %d %v %+v", w, code, err, res)
			}
			if w >= 0 {
				took = append(took, time.Since(t0))
			}
		}
		// The repack loop settles: no repack running, then none starting
		// after the last one's roll-up.
		waitRepackIdle(b, dir)
		time.Sleep(2 * time.Second)
		waitRepackIdle(b, dir)
		first, last := sidebyside.Median(took[:100]), sidebyside.Median(took[len(took)-100:])
		ours, oursObj := dirBytes(filepath.Join(dir, ".git")), dirBytes(filepath.Join(dir, ".git", "objects"))
		packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
		cp := filepath.Join(b.TempDir(), "copy.git")
		if out, err := exec.Command("cp", "-r", filepath.Join(dir, ".git"), cp).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
		os.RemoveAll(filepath.Join(cp, "memfsd")) // memfsd's own records, not git's
		os.Remove(filepath.Join(cp, "gc.pid"))    // the copy's gc runs alone
		cli(b, cp, "gc", "-q", "--aggressive", "--prune=now")
		gc, gcObj := dirBytes(cp), dirBytes(filepath.Join(cp, "objects"))
		b.ReportMetric(ms(first), "first100-ms")
		b.ReportMetric(ms(last), "last100-ms")
		b.ReportMetric(float64(last)/float64(first), "write-ratio")
		b.ReportMetric(ms(sidebyside.Median(took)), "median-ms")
		b.ReportMetric(float64(len(packs)), "packs")
		b.ReportMetric(float64(ours)/float64(gc), "git-size-ratio")
		b.ReportMetric(float64(oursObj)/float64(gcObj), "objects-size-ratio")
		{ // the trend, for the eye: medians of each 100 writes
			var line []string
			for k := 0; k+100 <= len(took); k += 100 {
				line = append(line, fmt.Sprintf("%.2f", ms(sidebyside.Median(took[k:k+100]))))
			}
			b.Logf("medians per 100 writes: %s", strings.Join(line, " "))
		}
		b.Logf("%d writes: first 100 %.2f ms, last 100 %.2f ms; .git %d bytes (objects %d, %d packs), after git gc --aggressive %d (objects %d)",
			writes, ms(first), ms(last), ours, oursObj, len(packs), gc, gcObj)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// dirBytes is the total size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
