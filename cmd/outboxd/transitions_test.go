package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/pgtest"
)

// TestTransitionsScript: docs/bench/transitions.sql, which the README's
// benchmark section times with pgbench, still runs on the migrated schema
// and takes a group of 50 invocations through created, executing and
// completed, with an event each.
func TestTransitionsScript(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/bench/transitions.sql")
	require.NoError(t, err)
	var lines []string
	for line := range strings.Lines(string(raw)) {
		if !strings.HasPrefix(line, "--") && !strings.HasPrefix(line, `\set`) {
			lines = append(lines, line)
		}
	}
	// pgbench's variable g names the group.
	script := strings.ReplaceAll(strings.Join(lines, ""), "(:g)", "(42)")
	statements := strings.Split(strings.TrimSpace(script), ";\n")
	require.Len(t, statements, 3, "the insert, the begin and the completion")

	ctx := context.Background()
	pool := pgtest.Pool(t)
	for i, stmt := range statements {
		var n int
		require.NoError(t, pool.QueryRow(ctx, stmt).Scan(&n), "statement %d", i+1)
		require.Equal(t, 50, n, "statement %d handles the group of 50", i+1)
	}
	var completed, events int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'completed' AND event_seq = 3),
		(SELECT count(*) FROM invocation_events) FROM action_invocations`).Scan(&completed, &events))
	require.Equal(t, 50, completed)
	require.Equal(t, 150, events, "created, started and completed for each")
}
