// Package telemetry defines outboxd's Prometheus metrics. Everything is
// registered on an injected registry; there are no global registrations.
package telemetry

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the counters and histograms the API and workers update.
type Metrics struct {
	// Invocations counts invocations entering a status, by resolved mode.
	Invocations *prometheus.CounterVec
	// JobDuration is the wall time of execute jobs by outcome.
	JobDuration *prometheus.HistogramVec
	// ApprovalLatency is the time from request to a human decision.
	ApprovalLatency *prometheus.HistogramVec
	// Drift counts invocations of connector tools whose definition changed
	// since an admin reviewed them.
	Drift *prometheus.CounterVec
}

// New creates the metrics and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Invocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "outboxd_invocations_total",
			Help: "Invocations entering a status, by resolved mode.",
		}, []string{"mode", "status"}),
		JobDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "outboxd_job_duration_seconds",
			Help:    "Duration of execute jobs (one attempt), by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12),
		}, []string{"source", "outcome"}),
		ApprovalLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "outboxd_approval_latency_seconds",
			Help:    "Time from an invocation's creation to a human approval or denial.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 900, 3600, 4 * 3600, 24 * 3600},
		}, []string{"decision"}),
	}
	m.Drift = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_connector_drift_total",
		Help: "Invocations of connector tools whose definition drifted since review.",
	}, []string{"source"})
	reg.MustRegister(m.Invocations, m.JobDuration, m.ApprovalLatency, m.Drift)
	return m
}

// NewNop returns metrics registered nowhere, for tests and tools.
func NewNop() *Metrics { return New(prometheus.NewRegistry()) }

// InvocationStatus counts one invocation entering status.
func (m *Metrics) InvocationStatus(mode, status string) {
	m.Invocations.WithLabelValues(mode, status).Inc()
}

// queueCollector reports River's job counts by queue and state at scrape
// time, so every process that serves /metrics shows the same numbers.
type queueCollector struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	desc   *prometheus.Desc
}

// RegisterQueueCollector registers the outboxd_queue_jobs gauge, read from
// river_job on every scrape.
func RegisterQueueCollector(reg prometheus.Registerer, pool *pgxpool.Pool, logger *slog.Logger) {
	reg.MustRegister(&queueCollector{
		pool:   pool,
		logger: logger,
		desc:   prometheus.NewDesc("outboxd_queue_jobs", "River jobs by queue and state.", []string{"queue", "state"}, nil),
	})
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := c.pool.Query(ctx, `SELECT queue, state::text, count(*) FROM river_job GROUP BY 1, 2`)
	if err != nil {
		c.logger.Warn("collecting queue depth", "error", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var queue, state string
		var n int64
		if err := rows.Scan(&queue, &state, &n); err != nil {
			c.logger.Warn("collecting queue depth", "error", err)
			return
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), queue, state)
	}
}
