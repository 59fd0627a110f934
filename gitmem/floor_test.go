package gitmem_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memfsd/memfsd/internal/gitserver"
	"github.com/memfsd/memfsd/internal/sidebyside"
)

// BenchmarkDurableWriteFloor measures the disk's floor for a durable write
// on this machine: one small file created, written, fsynced and renamed
// into place (and its folder synced), beside one durable memfsd commit of
// one file, so the commit's cost reads as a multiple of the floor. It
// prints floor-ms, commit-ms and commit÷floor.
func BenchmarkDurableWriteFloor(b *testing.B) {
	dir := b.TempDir()
	r := mustClone(b, gitserver.New(b, testToken), "floor")
	var floor, commit []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		tmp := filepath.Join(dir, fmt.Sprintf(".tmp-%d", i))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		f.Write([]byte(fmt.Sprintf("write %d\n", i)))
		f.Sync()
		f.Close()
		if err := os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("f%d", i))); err != nil {
			b.Fatal(err)
		}
		d, _ := os.Open(dir)
		d.Sync()
		d.Close()
		t1 := time.Now()
		p := fmt.Sprintf("notes/w%06d.md", i)
		writeFile(b, r.Dir, p, fmt.Sprintf("write %d\n", i))
		if _, err := r.CommitWrite([]string{p}, "memory: create "+p); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		floor, commit = append(floor, t1.Sub(t0)), append(commit, t2.Sub(t1))
	}
	b.StopTimer()
	mf, mc := sidebyside.Median(floor), sidebyside.Median(commit)
	b.ReportMetric(float64(mf.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(mc.Microseconds())/1000, "commit-ms")
	b.ReportMetric(float64(mc)/float64(mf), "commit/floor")
}
