package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/memfsd/memfsd/agent"
)

// metrics are the daemon's Prometheus series. No per-agent labels: a
// daemon may hold thousands of agents.
type metrics struct {
	reg         *prometheus.Registry
	commits     prometheus.Counter
	pushes      *prometheus.CounterVec
	pulls       prometheus.Counter
	errors      *prometheus.CounterVec
	pushLatency prometheus.Histogram
	// The mirror remote's pushes and failures (issue 22).
	mirrorPushes   *prometheus.CounterVec
	mirrorFailures *prometheus.CounterVec
}

func newMetrics(pending func() float64, agents func() float64, mirrorLag func() (commits, seconds float64)) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memfsd_commits_total", Help: "Commits made from memory writes.",
		}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memfsd_pushes_total", Help: "Turn syncs by outcome (pushed, clean, conflict, delayed, failed).",
		}, []string{"outcome"}),
		pulls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memfsd_pulls_total", Help: "Syncs that brought remote commits in.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memfsd_sync_errors_total", Help: "Sync failures by error class.",
		}, []string{"class"}),
		pushLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "memfsd_push_duration_seconds", Help: "Time to reconcile and push at a turn.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}),
		mirrorPushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memfsd_mirror_pushes_total", Help: "Mirror pushes by outcome (pushed, up_to_date, failed).",
		}, []string{"outcome"}),
		mirrorFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memfsd_mirror_failures_total", Help: "Failed mirror pushes by error class.",
		}, []string{"class"}),
	}
	m.reg.MustRegister(m.commits, m.pushes, m.pulls, m.errors, m.pushLatency, m.mirrorPushes, m.mirrorFailures,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "memfsd_mirror_pending_commits", Help: "Primary commits not yet on the mirror, all agents.",
		}, func() float64 { c, _ := mirrorLag(); return c }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "memfsd_mirror_lag_seconds", Help: "Longest time an agent's mirror has been behind its primary.",
		}, func() float64 { _, s := mirrorLag(); return s }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "memfsd_pending_commits", Help: "Local commits not yet on the remote, all agents.",
		}, pending),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "memfsd_agents", Help: "Agents managed.",
		}, agents),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	for _, o := range []string{agent.OutcomePushed, agent.OutcomeClean, agent.OutcomeConflict, agent.OutcomeDelayed, agent.OutcomeFailed} {
		m.pushes.WithLabelValues(o)
	}
	for _, o := range []string{"pushed", "up_to_date", "failed"} {
		m.mirrorPushes.WithLabelValues(o)
	}
	return m
}
