package invocationstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// seedListing inserts n invocations of org-1, each with parameters of the
// size of a message's, (three to a created_at, so
// the id breaks ties; one in ten failed, one in twenty of those a dead
// letter still listed, the others discarded) and a few of org-2, then
// vacuums and analyzes the table, as autovacuum would.
func seedListing(t *testing.T, b *testBundle, n int) {
	t.Helper()
	ctx := context.Background()
	// A synchronous commit: VACUUM marks a page all-visible only once the
	// commit of its rows is flushed (the tests' own server commits
	// asynchronously).
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL synchronous_commit = on`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `
INSERT INTO action_invocations (organization_id, session_id, automation_id, requested_by, origin, integration, action,
    risk_level, mode, mode_source, params, params_hash, status, created_at, dead_lettered_at, discarded_at)
SELECT o.org, CASE WHEN i % 2 = 0 THEN 'session-' || (i / 20) END, CASE WHEN i % 2 = 1 THEN 'auto-' || (i % 7) END,
       'agent', CASE WHEN i % 2 = 0 THEN 'invoke' ELSE 'envelope' END, CASE WHEN i % 4 = 0 THEN 'github' ELSE 'slack' END,
       'act', 'write', 'allow', 'default', jsonb_build_object('text', repeat('x', 600)), 'h',
       CASE WHEN i % 10 = 3 THEN 'failed' ELSE 'completed' END,
       timestamptz '2026-11-01 00:00:00+00' + (i / 3) * interval '1 second',
       CASE WHEN i % 10 = 3 THEN timestamptz '2026-11-01 00:00:00+00' + (i / 2) * interval '1 second' END,
       CASE WHEN i % 10 = 3 AND i % 20 <> 3 THEN now() END
FROM (VALUES ('org-1', $1::int), ('org-2', 300)) AS o(org, n), generate_series(1, o.n) AS i`, n)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	_, err = b.pool.Exec(ctx, `VACUUM ANALYZE action_invocations`)
	require.NoError(t, err)
}

// serial keeps the transaction's scans in its own backend, whose counts
// heapRowsRead reads (a parallel worker's are not).
func serial(t *testing.T, tx pgx.Tx) {
	t.Helper()
	_, err := tx.Exec(context.Background(), `SET LOCAL max_parallel_workers_per_gather = 0`)
	require.NoError(t, err)
}

// heapRowsRead is how many rows of action_invocations the transaction has
// read from the table so far: by sequential scans, and by index scans
// that went to the table (an index-only scan of all-visible pages reads
// none).
func heapRowsRead(t *testing.T, tx pgx.Tx) int64 {
	t.Helper()
	var n int64
	require.NoError(t, tx.QueryRow(context.Background(), `
SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables
WHERE relid = 'action_invocations'::regclass`).Scan(&n))
	return n
}

// TestStore_ListOrgReadsItsPageOnly: a page deep in an organization's
// invocations, filtered or not, and the count that comes with it read the
// rows of that page from the table, not every row before it nor every
// row of the organization; the page and the count are those of the plain
// query.
func TestStore_ListOrgReadsItsPageOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n = 20000
	seedListing(t, b, n)

	for _, tc := range []struct {
		name   string
		f      invocation.ListFilter
		where  string
		offset int
	}{
		{"all, deep", invocation.ListFilter{}, "true", n - 70},
		{"status", invocation.ListFilter{Status: invocation.StatusFailed}, "status = 'failed'", 1500},
		{"origin", invocation.ListFilter{Origin: "envelope"}, "origin = 'envelope'", 9000},
		{"source", invocation.ListFilter{Integration: "github"}, "integration = 'github'", 4000},
		{"automation", invocation.ListFilter{AutomationID: "auto-3"}, "automation_id = 'auto-3'", 1000},
		// A token's sources claim, read from the index as the source is.
		{"sources claim", invocation.ListFilter{Sources: auth.OnlySources("github")}, "integration = 'github'", 4000},
		{"sources claim and status", invocation.ListFilter{Sources: auth.OnlySources("slack", "linear"), Status: invocation.StatusFailed},
			"integration IN ('slack', 'linear') AND status = 'failed'", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			var wantTotal int64
			rows, err := b.pool.Query(ctx, `SELECT id::text FROM action_invocations
				WHERE organization_id = 'org-1' AND `+tc.where+` ORDER BY created_at DESC, id LIMIT 50 OFFSET $1`, tc.offset)
			require.NoError(t, err)
			want, err = pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM action_invocations
				WHERE organization_id = 'org-1' AND `+tc.where).Scan(&wantTotal))
			require.NotEmpty(t, want)

			tx := b.begin(t)
			serial(t, tx)
			before := heapRowsRead(t, tx)
			invs, total, err := b.store.ListOrg(ctx, tx, "org-1", tc.f, invocation.Page{Limit: 50, Offset: tc.offset})
			require.NoError(t, err)
			read := heapRowsRead(t, tx) - before

			got := make([]string, len(invs))
			for i, inv := range invs {
				got[i] = inv.ID.String()
			}
			require.Equal(t, want, got)
			require.Equal(t, wantTotal, total)
			require.LessOrEqual(t, read, int64(len(want)),
				"listing 50 invocations at offset %d read %d rows of action_invocations", tc.offset, read)
		})
	}
}

// TestStore_ListDeadLettersReadsItsPageOnly: the same for the dead
// letters.
func TestStore_ListDeadLettersReadsItsPageOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	seedListing(t, b, 40000)

	var want []string
	rows, err := b.pool.Query(ctx, `SELECT id::text FROM action_invocations
		WHERE organization_id = 'org-1' AND dead_lettered_at IS NOT NULL AND discarded_at IS NULL
		ORDER BY dead_lettered_at DESC, id LIMIT 50 OFFSET 1900`)
	require.NoError(t, err)
	want, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, want, 50)

	tx := b.begin(t)
	serial(t, tx)
	before := heapRowsRead(t, tx)
	invs, total, err := b.store.ListDeadLetters(ctx, tx, "org-1", auth.SourceClaim{}, invocation.Page{Limit: 50, Offset: 1900})
	require.NoError(t, err)
	read := heapRowsRead(t, tx) - before
	got := make([]string, len(invs))
	for i, inv := range invs {
		got[i] = inv.ID.String()
	}
	require.Equal(t, want, got)
	require.EqualValues(t, 2000, total)
	require.LessOrEqual(t, read, int64(len(want)), "listing 50 dead letters at offset 1900 read %d rows", read)
}
