package telemetry

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestQueueCollector_BoundedCountsAndAge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	_, err := pool.Exec(ctx, `
		INSERT INTO river_queue (name, updated_at) VALUES ('actions', now()), ('idle', now());
		INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
		SELECT '{}', 'execute', 5, 'actions', 'available', now() - make_interval(secs => 90 - g) FROM generate_series(0, 4) g;
		INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at, priority)
		VALUES ('{}', 'execute', 5, 'actions', 'available', now() - interval '1 second', 2);
		INSERT INTO river_job (args, kind, max_attempts, queue, state, finalized_at)
		VALUES ('{}', 'execute', 5, 'actions', 'completed', now());`)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	reg.MustRegister(newQueueCollector(pool, nil, 3))
	families, err := reg.Gather()
	require.NoError(t, err)
	jobs, ages := map[string]float64{}, map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			switch f.GetName() {
			case "outboxd_queue_jobs":
				jobs[strings.Join(labels, " ")] = m.GetGauge().GetValue()
			case "outboxd_queue_age_seconds":
				ages[strings.Join(labels, " ")] = m.GetGauge().GetValue()
			}
		}
	}
	require.Len(t, jobs, 16, "every state of every queue: %v", jobs)
	require.Equal(t, 3.0, jobs["actions available"], "counting stops at the cap")
	require.Equal(t, 1.0, jobs["actions completed"])
	require.Equal(t, 0.0, jobs["idle available"])
	require.InDelta(t, 90, ages["actions"], 5, "the oldest available job, whatever its priority")
	require.Zero(t, ages["idle"])
}
