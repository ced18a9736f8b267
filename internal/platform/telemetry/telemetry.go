// Package telemetry defines outboxd's Prometheus metrics. Everything is
// registered on an injected registry; there are no global registrations.
package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
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
	// ConnectorList is the time to fetch an MCP connector's tool list
	// (cache misses only), by outcome.
	ConnectorList *prometheus.HistogramVec
	// StreamSubscribers is the number of open event streams (SSE).
	StreamSubscribers prometheus.Gauge
	// WebhookDeliveries counts webhook delivery attempts by outcome
	// (delivered, retry, dead, refused).
	WebhookDeliveries *prometheus.CounterVec
	// WebhookLatency is the duration of webhook delivery attempts by outcome.
	WebhookLatency *prometheus.HistogramVec
	// SlackNotifications counts Slack approval messages posted and updated
	// and interactivity answers, by kind and outcome.
	SlackNotifications *prometheus.CounterVec
	// PauseHolds counts execute jobs held (snoozed) because their
	// organization is paused.
	PauseHolds prometheus.Counter
	// Behind counts invocations whose jobs were queued behind other
	// organizations' because theirs asked past limits.org_fair_rate.
	Behind prometheus.Counter
	// QuietHoursHolds counts execute jobs held (snoozed until the window
	// ends, no attempt spent) by quiet hours.
	QuietHoursHolds prometheus.Counter
	// GateSkips counts invocations a gate ended without a call, by gate
	// (must_run_before, do_not_contact).
	GateSkips *prometheus.CounterVec
	// BucketWaits counts execute jobs delayed (snoozed) because their rate
	// bucket had no token or concurrency slot, by bucket.
	BucketWaits *prometheus.CounterVec
	// BucketDrains counts rate buckets drained for a provider's Retry-After,
	// by bucket.
	BucketDrains *prometheus.CounterVec
	// Unreconciled counts retries that acted again without first looking
	// for an earlier attempt's effect, because the look-up could not be
	// made, by source and reason.
	Unreconciled *prometheus.CounterVec
	// MCPCalls counts tools/call requests of the MCP front door by outcome
	// (completed, pending, denied, failed, expired, cancelled, refused:
	// a limit or refusal the model reads, invalid: a JSON-RPC error).
	MCPCalls *prometheus.CounterVec
	// MCPWait is how long MCP calls waited for an approval and its result.
	MCPWait prometheus.Histogram
	// MCPSessions is the MCP clients this process tells of tool list
	// changes: 2025-11-25 sessions and 2026-07-28 subscriptions/listen
	// streams.
	MCPSessions prometheus.Gauge
	// MCPListChanged counts notifications/tools/list_changed sent.
	MCPListChanged prometheus.Counter
	// MCPSessionsLimited counts sessions closed, or refused, because their
	// organization reached mcp.max_sessions in this process, by outcome
	// (closed: the one idle longest made room; refused: none was idle).
	MCPSessionsLimited *prometheus.CounterVec
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
	m.ConnectorList = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "outboxd_connector_list_duration_seconds",
		Help:    "Time to fetch an MCP connector's tool list (cache misses only), by outcome (ok or error).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
	}, []string{"outcome"})
	m.StreamSubscribers = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "outboxd_event_stream_subscribers",
		Help: "Open event streams (SSE) of this process.",
	})
	m.WebhookDeliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_webhook_deliveries_total",
		Help: "Webhook delivery attempts, by outcome (delivered, retry, dead, refused).",
	}, []string{"outcome"})
	m.WebhookLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "outboxd_webhook_delivery_duration_seconds",
		Help:    "Duration of webhook delivery attempts, by outcome.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
	}, []string{"outcome"})
	m.SlackNotifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_slack_notifications_total",
		Help: "Slack approval messages posted and updated, and clicks answered, by kind (post, update, click) and outcome.",
	}, []string{"kind", "outcome"})
	m.Behind = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "outboxd_invocations_behind_total",
		Help: "Invocations whose jobs were queued behind other organizations' because their organization asked faster than limits.org_fair_rate.",
	})
	m.PauseHolds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "outboxd_org_pause_holds_total",
		Help: "Execute jobs held (snoozed, no attempt spent) because their organization is paused.",
	})
	m.QuietHoursHolds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "outboxd_quiet_hours_holds_total",
		Help: "Execute jobs held (snoozed until the window ends, no attempt spent) by quiet hours.",
	})
	m.GateSkips = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_gate_skips_total",
		Help: "Invocations a gate ended without calling the provider, by gate (must_run_before, do_not_contact).",
	}, []string{"gate"})
	m.BucketWaits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_rate_bucket_waits_total",
		Help: "Execute jobs delayed (snoozed, no attempt spent) because their rate bucket had no token or concurrency slot, by bucket.",
	}, []string{"bucket"})
	m.BucketDrains = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_rate_bucket_drains_total",
		Help: "Rate buckets drained for a provider's Retry-After (a 429), by bucket.",
	}, []string{"bucket"})
	m.Unreconciled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_reconcile_unavailable_total",
		Help: "Retries that acted again without looking for an earlier attempt's effect, the look-up being impossible, by source and reason (missing_scope, channel_name, not_in_channel...).",
	}, []string{"source", "reason"})
	m.MCPCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_mcp_calls_total",
		Help: "tools/call requests of the MCP front door, by outcome (completed, pending, denied, failed, expired, cancelled, refused, invalid).",
	}, []string{"outcome"})
	m.MCPWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "outboxd_mcp_wait_seconds",
		Help:    "Time MCP calls waited for an approval and its result.",
		Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	})
	m.MCPSessions = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "outboxd_mcp_sessions",
		Help: "MCP clients connected to this process that are told of tool list changes (2025-11-25 sessions, 2026-07-28 subscriptions/listen streams).",
	})
	m.MCPListChanged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "outboxd_mcp_list_changed_total",
		Help: "notifications/tools/list_changed sent to MCP clients whose tool list changed.",
	})
	m.MCPSessionsLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_mcp_sessions_limited_total",
		Help: "MCP sessions closed (closed: the organization's session idle longest, to make room) or refused (refused: none was idle) at mcp.max_sessions.",
	}, []string{"outcome"})
	reg.MustRegister(m.Invocations, m.JobDuration, m.ApprovalLatency, m.Drift, m.ConnectorList,
		m.StreamSubscribers, m.WebhookDeliveries, m.WebhookLatency, m.SlackNotifications, m.Behind, m.PauseHolds, m.QuietHoursHolds, m.GateSkips,
		m.BucketWaits, m.BucketDrains, m.Unreconciled,
		m.MCPCalls, m.MCPWait, m.MCPSessions, m.MCPListChanged, m.MCPSessionsLimited)
	return m
}

// ObserveConnectorList records one tool-list fetch.
func (m *Metrics) ObserveConnectorList(d time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.ConnectorList.WithLabelValues(outcome).Observe(d.Seconds())
}

// NewNop returns metrics registered nowhere, for tests and tools.
func NewNop() *Metrics { return New(prometheus.NewRegistry()) }

// InvocationStatus counts one invocation entering status.
func (m *Metrics) InvocationStatus(mode, status string) {
	m.Invocations.WithLabelValues(mode, status).Inc()
}

// MaxQueueCount caps each job count of outboxd_queue_jobs and of the queue
// listing: a count at the cap means at least that many. Counting stops
// there, so a scrape reads at most this many index entries per queue and
// state however large river_job grows.
const MaxQueueCount = 10000

// countJobsSQL counts jobs per queue and state, each count stopping at $1.
// Every count is a range of river_job_prioritized_fetching_index (state,
// queue, ...), so no count reads the table beyond its cap.
const countJobsSQL = `
SELECT q.name, s.state::text,
       (SELECT count(*) FROM (SELECT 1 FROM river_job j
                              WHERE j.state = s.state AND j.queue = q.name LIMIT $1) AS capped)
FROM river_queue q CROSS JOIN unnest(enum_range(NULL::river_job_state)) AS s(state)`

// queueAgeSQL is the age of the oldest available job per queue, 0 when
// none: for each priority, the first job of the fetch index, so a handful
// of index probes per queue.
const queueAgeSQL = `
SELECT q.name,
       coalesce(extract(epoch FROM now() - (
           SELECT min(head.scheduled_at) FROM unnest(ARRAY[1, 2, 3, 4]) AS p(priority),
           LATERAL (SELECT j.scheduled_at FROM river_job j
                    WHERE j.state = 'available' AND j.queue = q.name AND j.priority = p.priority
                    ORDER BY j.scheduled_at LIMIT 1) AS head)), 0)::float8
FROM river_queue q`

// Querier is what the counts need of a pool or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// CountJobs returns River's job counts by queue and state, each capped at
// limit (see MaxQueueCount). States without jobs are 0.
func CountJobs(ctx context.Context, db Querier, limit int) (map[string]map[string]int64, error) {
	rows, err := db.Query(ctx, countJobsSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("counting jobs: %w", err)
	}
	counts := map[string]map[string]int64{}
	var queue, state string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&queue, &state, &n}, func() error {
		if counts[queue] == nil {
			counts[queue] = map[string]int64{}
		}
		counts[queue][state] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counting jobs: %w", err)
	}
	return counts, nil
}

// queueCollector reports River's job counts and queue ages at scrape time,
// so every process that serves /metrics shows the same numbers.
type queueCollector struct {
	pool     *pgxpool.Pool
	logger   *slog.Logger
	maxCount int
	jobs     *prometheus.Desc
	age      *prometheus.Desc
}

// RegisterQueueCollector registers the outboxd_queue_jobs and
// outboxd_queue_age_seconds gauges, read from River's tables on every
// scrape with two bounded queries (see MaxQueueCount).
func RegisterQueueCollector(reg prometheus.Registerer, pool *pgxpool.Pool, logger *slog.Logger) {
	reg.MustRegister(newQueueCollector(pool, logger, MaxQueueCount))
}

func newQueueCollector(pool *pgxpool.Pool, logger *slog.Logger, maxCount int) *queueCollector {
	return &queueCollector{
		pool:     pool,
		logger:   logger,
		maxCount: maxCount,
		jobs: prometheus.NewDesc("outboxd_queue_jobs",
			fmt.Sprintf("River jobs by queue and state, counted up to %d (a value at the cap means at least that many).", maxCount),
			[]string{"queue", "state"}, nil),
		age: prometheus.NewDesc("outboxd_queue_age_seconds",
			"Age of the oldest available job per queue: how long the next job has waited for a worker; 0 when none waits.",
			[]string{"queue"}, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.jobs
	ch <- c.age
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := CountJobs(ctx, c.pool, c.maxCount)
	if err != nil {
		c.logger.Warn("collecting queue depth", "error", err)
		return
	}
	for queue, states := range counts {
		for state, n := range states {
			ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(n), queue, state)
		}
	}
	rows, err := c.pool.Query(ctx, queueAgeSQL)
	if err != nil {
		c.logger.Warn("collecting queue age", "error", err)
		return
	}
	var queue string
	var age float64
	_, err = pgx.ForEachRow(rows, []any{&queue, &age}, func() error {
		ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, max(age, 0), queue)
		return nil
	})
	if err != nil {
		c.logger.Warn("collecting queue age", "error", err)
	}
}
