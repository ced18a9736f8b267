package auditstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/audit/auditstore"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestStore_ListByTargetOrActorReadsItsEntries: in a trail made mostly of
// decisions on invocations, the history of one connector, of the webhooks
// or of one person, or the entries of a token narrowed to one connector,
// reads from the table the entries it lists, not every entry of the
// organization; the pages are those of the plain query, also for a token
// narrowed to the decisions' source.
func TestStore_ListByTargetOrActorReadsItsEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)

	// 20,000 approvals by approver-N (of slack, every 10th of github), and
	// every 200th entry a change of connector c-(N%3) by alice or of a
	// webhook by bob; a few entries of org-2 that name the same targets. Committed synchronously: VACUUM
	// marks a page all-visible only once its rows' commit is flushed (the
	// tests' own server commits asynchronously).
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL synchronous_commit = on`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `
INSERT INTO audit_entries (organization_id, seq, occurred_at, actor_subject, actor_kind, actor_role, action,
    target_type, target_id, before_state, after_state, prev_hash, hash, sources)
SELECT o.org, i, timestamptz '2026-11-01 00:00:00+00' + i * interval '1 minute',
       CASE WHEN i % 400 = 0 THEN 'alice' WHEN i % 200 = 0 THEN 'bob' ELSE 'approver-' || (i % 10) END, 'user', 'admin',
       CASE WHEN i % 400 = 0 THEN 'connector.update' WHEN i % 200 = 0 THEN 'webhook.create' ELSE 'invocation.approve' END,
       CASE WHEN i % 400 = 0 THEN 'connector' WHEN i % 200 = 0 THEN 'webhook' ELSE 'invocation' END,
       CASE WHEN i % 400 = 0 THEN 'c-' || (i / 400 % 3) WHEN i % 200 = 0 THEN 'w-' || i ELSE md5(i::text) END,
       'null', '{"status":"approved"}', md5(i::text || 'p'), md5(i::text),
       CASE WHEN i % 400 = 0 THEN ARRAY['connector:c-' || (i / 400 % 3)] WHEN i % 200 = 0 THEN '{}'
            WHEN i % 10 = 1 THEN '{github}' ELSE '{slack}' END
FROM (VALUES ('org-1', 20000), ('org-2', 2000)) AS o(org, n), generate_series(1, o.n) AS i`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	_, err = pool.Exec(ctx, `VACUUM ANALYZE audit_entries`)
	require.NoError(t, err)

	store := auditstore.New()
	for _, tc := range []struct {
		name  string
		p     auditstore.ListParams
		where string
		// reads is what it may read when not the matching entries: for a
		// claim, the entries of its sources in every organization (its
		// index holds the sources, not the organization).
		reads string
	}{
		{"one connector", auditstore.ListParams{TargetType: "connector", TargetID: "c-1"}, "target_type = 'connector' AND target_id = 'c-1'", ""},
		{"one connector, second page", auditstore.ListParams{TargetType: "connector", TargetID: "c-1", BeforeSeq: 10000}, "target_type = 'connector' AND target_id = 'c-1' AND seq < 10000", ""},
		{"webhooks", auditstore.ListParams{TargetType: "webhook"}, "target_type = 'webhook'", ""},
		{"one person", auditstore.ListParams{Actor: "alice"}, "actor_subject = 'alice'", ""},
		{"narrowed to one connector", auditstore.ListParams{Sources: []string{"connector:c-1"}}, "sources = '{connector:c-1}'",
			"sources = '{connector:c-1}'"},
		{"narrowed to one connector, second page", auditstore.ListParams{Sources: []string{"connector:c-1", "gmail"}, BeforeSeq: 10000},
			"sources = '{connector:c-1}' AND seq < 10000", "sources = '{connector:c-1}'"},
		{"narrowed to github", auditstore.ListParams{Sources: []string{"github"}}, "sources = '{github}'", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := pool.Query(ctx, `SELECT seq FROM audit_entries WHERE organization_id = 'org-1' AND `+tc.where+` ORDER BY seq DESC LIMIT 21`)
			require.NoError(t, err)
			want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			require.NoError(t, err)
			require.NotEmpty(t, want)
			bound := "organization_id = 'org-1' AND " + tc.where
			if tc.reads != "" {
				bound = tc.reads
			}
			var matching int64
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_entries WHERE `+bound).Scan(&matching))

			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			// The scans in this backend, whose counts read counts (a
			// parallel worker's are not).
			_, err = tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`)
			require.NoError(t, err)
			before := read(t, tx)
			p := tc.p
			p.Org, p.Limit = "org-1", 21
			got, err := store.List(ctx, tx, &p)
			require.NoError(t, err)
			n := read(t, tx) - before

			seqs := make([]int64, len(got))
			for i, r := range got {
				require.Equal(t, "org-1", r.Org)
				seqs[i] = r.Seq
			}
			require.Equal(t, want, seqs)
			require.LessOrEqual(t, n, matching, "listing %d of %d matching entries read %d rows of audit_entries", len(got), matching, n)
		})
	}
}

// read is how many rows of audit_entries the transaction has read from
// the table so far: by sequential scans, and by index scans that went to
// the table.
func read(t *testing.T, tx pgx.Tx) int64 {
	t.Helper()
	var n int64
	require.NoError(t, tx.QueryRow(context.Background(), `
SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables
WHERE relid = 'audit_entries'::regclass`).Scan(&n))
	return n
}
