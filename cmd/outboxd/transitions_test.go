package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestTransitionsScript: the pgbench script docs/bench/transitions.sh
// makes of outboxd's statements, which docs/benchmark.md
// times, runs on the migrated schema and takes a group of 50 invocations
// through created, executing and completed, with an event each.
func TestTransitionsScript(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("bash", "docs/bench/transitions.sh", "--print")
	cmd.Dir = "../.."
	raw, err := cmd.Output()
	require.NoError(t, err)
	first, script, ok := strings.Cut(string(raw), "\n")
	require.True(t, ok)
	require.Equal(t, `\set g random(1, 2000000000)`, first)
	// pgbench's variable g names the group.
	script = strings.ReplaceAll(script, "(:g)", "(42)")
	require.NotContains(t, script, "@", "every parameter is filled")
	statements := strings.Split(strings.TrimSpace(script), ";\n")
	require.Len(t, statements, 3, "the insert, the begin and the completion")

	ctx := context.Background()
	pool := pgtest.Pool(t)
	for i, stmt := range statements {
		rows, err := pool.Query(ctx, stmt)
		require.NoError(t, err, "statement %d", i+1)
		n := 0
		for rows.Next() {
			n++
		}
		require.NoError(t, rows.Err(), "statement %d", i+1)
		require.Equal(t, 50, n, "statement %d answers for the group of 50", i+1)
	}
	var completed, events int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'completed' AND event_seq = 3),
		(SELECT count(*) FROM invocation_events) FROM action_invocations`).Scan(&completed, &events))
	require.Equal(t, 50, completed)
	require.Equal(t, 150, events, "created, started and completed for each")
}
