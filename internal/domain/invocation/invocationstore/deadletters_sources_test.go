package invocationstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// TestStore_ListDeadLettersBySources: the dead letters listed through a
// sources claim are those of its sources, their total too; and the
// listing without a claim still reads its page only, run after run on the
// same connection (where Postgres may move the statement to a plan made
// for any claim).
func TestStore_ListDeadLettersBySources(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	seedListing(t, b, 40000) // every dead letter is Slack's: 2000 of them

	rows, err := b.pool.Query(ctx, `SELECT id::text FROM action_invocations
		WHERE organization_id = 'org-1' AND dead_lettered_at IS NOT NULL AND discarded_at IS NULL
		ORDER BY dead_lettered_at DESC, id LIMIT 50 OFFSET 1900`)
	require.NoError(t, err)
	want, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, want, 50)

	tx := b.begin(t)
	serial(t, tx)
	list := func(sources auth.SourceClaim) ([]string, int64) {
		t.Helper()
		invs, total, err := b.store.ListDeadLetters(ctx, tx, "org-1", sources, invocation.Page{Limit: 50, Offset: 1900})
		require.NoError(t, err)
		ids := []string{}
		for _, inv := range invs {
			ids = append(ids, inv.ID.String())
		}
		return ids, total
	}
	// Listings through a claim first, whose plans read the table: the
	// plan Postgres may keep after five runs must not be theirs.
	for range 6 {
		got, total := list(auth.OnlySources("slack", "linear"))
		require.Equal(t, want, got)
		require.EqualValues(t, 2000, total)
	}
	for run := range 8 {
		before := heapRowsRead(t, tx)
		got, total := list(auth.SourceClaim{})
		read := heapRowsRead(t, tx) - before
		require.Equal(t, want, got, "run %d", run)
		require.EqualValues(t, 2000, total)
		require.LessOrEqual(t, read, int64(len(want)), "run %d: listing 50 dead letters at offset 1900 read %d rows", run, read)
	}

	for _, sources := range []auth.SourceClaim{auth.OnlySources("github"), auth.OnlySources()} {
		got, total := list(sources)
		require.Empty(t, got)
		require.Zero(t, total)
	}
}
