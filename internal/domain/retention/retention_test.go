package retention_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/retention"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type testBundle struct {
	pool *pgxpool.Pool
	reg  *prometheus.Registry
}

func setup(t *testing.T) (context.Context, *testBundle) {
	t.Helper()
	return context.Background(), &testBundle{pool: pgtest.Pool(t), reg: prometheus.NewRegistry()}
}

// insertInvocations inserts n invocations of org in status, finished (or,
// for an unfinished status, created) age ago, each with two events.
func insertInvocations(ctx context.Context, t *testing.T, pool *pgxpool.Pool, org, status string, finished bool, age time.Duration, n int) {
	t.Helper()
	_, err := pool.Exec(ctx, `
WITH inv AS (
    INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level,
        mode, mode_source, params, params_hash, status, created_at, completed_at)
    SELECT $1, 'test', 'invoke', 'demo', 'act', 'low', 'allow', 'default', '{}', 'h', $2,
        now() - $3::interval, CASE WHEN $4 THEN now() - $3::interval END
    FROM generate_series(1, $5)
    RETURNING id, organization_id, status
)
INSERT INTO invocation_events (invocation_id, organization_id, seq, type, to_status)
SELECT inv.id, inv.organization_id, s, 'created', inv.status FROM inv, generate_series(1, 2) s`,
		org, status, age.String(), finished, n)
	require.NoError(t, err)
}

func count(ctx context.Context, t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}

const day = 24 * time.Hour

// value reads a counter's or a gauge's value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

func TestService_Run_Invocations(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)

	// 100,000 invocations finished 100 days ago, across two organizations
	// and every terminal status.
	terminal := []string{"completed", "failed", "denied", "expired", "skipped", "cancelled"}
	for i, status := range terminal {
		n := 100_000 / len(terminal)
		if i == 0 {
			n += 100_000 % len(terminal)
		}
		insertInvocations(ctx, t, b.pool, "org-a", status, true, 100*day, n-n/4)
		insertInvocations(ctx, t, b.pool, "org-b", status, true, 100*day, n/4)
	}
	// Unfinished ones created as long ago, one even carrying a finish time,
	// and finished ones newer than the cutoff.
	for _, status := range []string{"pending", "approved", "executing"} {
		insertInvocations(ctx, t, b.pool, "org-a", status, false, 200*day, 10)
		insertInvocations(ctx, t, b.pool, "org-b", status, true, 200*day, 1)
	}
	insertInvocations(ctx, t, b.pool, "org-a", "completed", true, 89*day, 50)
	insertInvocations(ctx, t, b.pool, "org-b", "failed", true, time.Hour, 50)
	require.EqualValues(t, 100_133, count(ctx, t, b.pool, `SELECT count(*) FROM action_invocations`))

	svc, err := retention.New(&retention.Deps{Pool: b.pool, Registerer: b.reg}, &retention.Config{Batch: 1000, Budget: time.Hour})
	require.NoError(t, err)
	rep, err := svc.Run(ctx)
	require.NoError(t, err)

	require.EqualValues(t, 100_000, rep.Deleted["action_invocations"])
	require.EqualValues(t, 200_000, rep.Deleted["invocation_events"])
	require.LessOrEqual(t, rep.LargestBatch, int64(1000), "a batch deleted more than retention.batch")
	require.EqualValues(t, 1000, rep.LargestBatch)
	// org-a's 75,003 rows in batches of 1000: 75 full batches and a short
	// one; org-b's 24,997: 24 and a short one.
	require.Equal(t, 101, rep.Batches["invocations"])
	require.Empty(t, rep.Unfinished)
	require.InDelta(t, 100_000, value(t, svc.Metrics().Deleted.WithLabelValues("action_invocations")), 0)
	require.InDelta(t, 200_000, value(t, svc.Metrics().Deleted.WithLabelValues("invocation_events")), 0)

	require.EqualValues(t, 133, count(ctx, t, b.pool, `SELECT count(*) FROM action_invocations`))
	require.EqualValues(t, 33, count(ctx, t, b.pool,
		`SELECT count(*) FROM action_invocations WHERE status IN ('pending', 'approved', 'executing')`), "an unfinished invocation was deleted")
	require.EqualValues(t, 100, count(ctx, t, b.pool,
		`SELECT count(*) FROM action_invocations WHERE status IN ('completed', 'failed')`), "an invocation newer than the cutoff was deleted")
	require.EqualValues(t, 266, count(ctx, t, b.pool, `SELECT count(*) FROM invocation_events`))
	require.Zero(t, count(ctx, t, b.pool,
		`SELECT count(*) FROM invocation_events e WHERE NOT EXISTS (SELECT FROM action_invocations i WHERE i.id = e.invocation_id)`),
		"events outlived their invocation")

	// What each organization lost is recorded for its operations page.
	runs, err := retention.OrgRuns(ctx, b.pool, "org-b")
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, "action_invocations", runs[0].Table)
	require.EqualValues(t, 24_997, runs[0].LastDeleted)
	require.Equal(t, "invocation_events", runs[1].Table)
	require.EqualValues(t, 2*24_997, runs[1].DeletedTotal)

	// A second run finds nothing, and leaves the record as it was.
	rep, err = svc.Run(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Deleted["action_invocations"])
	again, err := retention.OrgRuns(ctx, b.pool, "org-b")
	require.NoError(t, err)
	require.Equal(t, runs, again)
}

func TestService_Run_Budget(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	insertInvocations(ctx, t, b.pool, "org-a", "completed", true, 100*day, 2500)

	// A spent budget still runs one batch, then leaves the rest to the next
	// run.
	svc, err := retention.New(&retention.Deps{Pool: b.pool}, &retention.Config{Batch: 1000, Budget: time.Nanosecond})
	require.NoError(t, err)
	rep, err := svc.Run(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1000, rep.Deleted["action_invocations"])
	require.Equal(t, []string{"invocations"}, rep.Unfinished)
	require.EqualValues(t, 1500, count(ctx, t, b.pool, `SELECT count(*) FROM action_invocations`))
}

// TestService_Run_BudgetGoesRoundTheOrganizations: a run whose budget
// ran out started the next from the first organization again, so one
// organization's backlog took every run's budget while the others' rows
// outlived their retention for as long; the next run goes on from the
// organization after the one the budget ran out on.
func TestService_Run_BudgetGoesRoundTheOrganizations(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	for _, org := range []string{"org-a", "org-b", "org-c"} {
		insertInvocations(ctx, t, b.pool, org, "completed", true, 100*day, 3)
	}
	left := func(org string) int64 {
		return count(ctx, t, b.pool, `SELECT count(*) FROM action_invocations WHERE organization_id = $1`, org)
	}

	// Each run's budget is spent by its first batch.
	svc, err := retention.New(&retention.Deps{Pool: b.pool}, &retention.Config{Batch: 1, Budget: time.Nanosecond})
	require.NoError(t, err)
	for range 3 {
		rep, err := svc.Run(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, rep.Deleted["action_invocations"])
		require.Equal(t, []string{"invocations"}, rep.Unfinished)
	}
	for _, org := range []string{"org-a", "org-b", "org-c"} {
		require.EqualValues(t, 2, left(org), "%s: one batch each in three runs", org)
	}
	for range 6 {
		_, err := svc.Run(ctx)
		require.NoError(t, err)
	}
	for _, org := range []string{"org-a", "org-b", "org-c"} {
		require.Zero(t, left(org), org)
	}
}

func TestService_Run_Forever(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	insertInvocations(ctx, t, b.pool, "org-a", "completed", true, 1000*day, 10)

	svc, err := retention.New(&retention.Deps{Pool: b.pool}, &retention.Config{Invocations: retention.Forever})
	require.NoError(t, err)
	rep, err := svc.Run(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Deleted["action_invocations"])
	require.EqualValues(t, 10, count(ctx, t, b.pool, `SELECT count(*) FROM action_invocations`))
}

func TestService_Run_WebhookDeliveries(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	_, err := b.pool.Exec(ctx, `
INSERT INTO webhooks (id, organization_id, url, events, secret_sealed) VALUES
    ('00000000-0000-0000-0000-00000000000a', 'org-a', 'https://a.example', '{}', '\x00'),
    ('00000000-0000-0000-0000-00000000000b', 'org-b', 'https://b.example', '{}', '\x00')`)
	require.NoError(t, err)
	deliveries := func(webhook, org, status string, age time.Duration, n int) {
		_, err := b.pool.Exec(ctx, `
INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, payload, status, created_at)
SELECT gen_random_uuid(), $1, $2, nextval('invocation_events_id_seq'), 'completed', '{}', $3, now() - $4::interval
FROM generate_series(1, $5)`, webhook, org, status, age.String(), n)
		require.NoError(t, err)
	}
	const a, wb = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	for _, status := range []string{"delivered", "dead", "cancelled"} {
		deliveries(a, "org-a", status, 31*day, 700)
		deliveries(wb, "org-b", status, 40*day, 300)
	}
	deliveries(a, "org-a", "pending", 31*day, 5)
	deliveries(wb, "org-b", "retrying", 40*day, 5)
	deliveries(a, "org-a", "delivered", 29*day, 5)

	svc, err := retention.New(&retention.Deps{Pool: b.pool, Registerer: b.reg}, &retention.Config{Batch: 250, Budget: time.Hour})
	require.NoError(t, err)
	rep, err := svc.Run(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3000, rep.Deleted["webhook_deliveries"])
	require.LessOrEqual(t, rep.LargestBatch, int64(250))
	// 2100 rows in batches of 250 (9 with the short last), 900 (4).
	require.Equal(t, 13, rep.Batches["webhook_deliveries"])
	require.EqualValues(t, 15, count(ctx, t, b.pool, `SELECT count(*) FROM webhook_deliveries`))
	require.EqualValues(t, 5, count(ctx, t, b.pool, `SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`))
	require.InDelta(t, 3000, value(t, svc.Metrics().Deleted.WithLabelValues("webhook_deliveries")), 0)
	require.InDelta(t, 3000, value(t, svc.Metrics().LastRunDeleted.WithLabelValues("webhook_deliveries")), 0)
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	for _, cfg := range []retention.Config{
		{Invocations: -2 * time.Hour},
		{WebhookDeliveries: -time.Second},
		{AuditEntries: -time.Second},
		{AuditEntries: time.Hour},
		{Interval: time.Millisecond},
		{Batch: -1},
		{Batch: 1_000_000},
	} {
		_, err := retention.New(&retention.Deps{}, &cfg)
		require.Error(t, err, "%+v", cfg)
	}
}
