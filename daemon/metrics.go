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
}

func newMetrics(pending func() float64, agents func() float64) *metrics {
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
	}
	m.reg.MustRegister(m.commits, m.pushes, m.pulls, m.errors, m.pushLatency,
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
	return m
}
