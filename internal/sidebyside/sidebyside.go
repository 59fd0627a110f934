// Package sidebyside reports benchmarks that time memfsd and the git CLI
// alternately: both medians and their ratio.
package sidebyside

import (
	"slices"
	"testing"
	"time"
)

// Median is the middle of d.
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// Report adds memfsd-ms, cli-ms and ratio (memfsd ÷ CLI) to b's result.
func Report(b *testing.B, ours, cli []time.Duration) {
	mo, mc := Median(ours), Median(cli)
	b.ReportMetric(float64(mo.Microseconds())/1000, "memfsd-ms")
	b.ReportMetric(float64(mc.Microseconds())/1000, "cli-ms")
	b.ReportMetric(float64(mo)/float64(mc), "ratio")
}
