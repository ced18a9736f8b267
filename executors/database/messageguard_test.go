package database_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
)

// TestQuery_CopyToStdoutIsRefused: COPY ... TO STDOUT answers with copy
// messages rather than rows, which no cap bounded: the driver read and
// dropped them until the statement_timeout, so one call kept the
// database's server busy for minutes. The call now fails at once with a
// clear error, the server's COPY ends with the dropped connection, and
// the next call is served.
func TestQuery_CopyToStdoutIsRefused(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)

	src := newClient(t, &database.Config{MaxConns: 1}).Source(database.Database{ID: uuid.New(), Name: "shop", StatementTimeout: time.Minute})
	for _, sql := range []string{
		`COPY (SELECT generate_series(1, 1000000000), repeat('x', 100)) TO STDOUT`,
		`copy shop.items to stdout with (format csv)`,
		`COPY (SELECT 1) TO STDOUT (FORMAT binary)`,
	} {
		_, e := query(t, src, tg.URL, sql)
		require.NotNil(t, e, sql)
		require.Equal(t, database.CodeQueryError, e.Code, "%s: %v", sql, e)
		require.False(t, e.Retryable, sql)
		require.Contains(t, e.Message, "COPY is not supported", sql)
	}
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY (SELECT generate_series%'`).Scan(&n))
		return n == 0
	}, 30*time.Second, 50*time.Millisecond, "the server's COPY ended with the call")

	res, e := query(t, src, tg.URL, `SELECT count(*) FROM shop.items`)
	require.Nil(t, e)
	require.Equal(t, `3`, string(res.Rows[0][0]))
	// COPY FROM is still refused by the read-only transaction.
	_, e = query(t, src, tg.URL, `COPY shop.items FROM STDIN`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeReadOnly, e.Code, e.Message)
}

// TestQuery_NoticeFloodIsStopped: the driver drops notices, so a
// statement that raised them in a loop streamed them to outboxd until
// its statement_timeout. Reading stops after MaxNoticeBytes of them; a
// few notices do not matter.
func TestQuery_NoticeFloodIsStopped(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)

	src := newClient(t, &database.Config{MaxConns: 1}).Source(database.Database{ID: uuid.New(), Name: "shop", StatementTimeout: time.Minute})
	_, e := query(t, src, tg.URL, `DO $$ BEGIN LOOP RAISE NOTICE '%', repeat('n', 10000); END LOOP; END $$`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code, e.Message)
	require.False(t, e.Retryable)
	require.Contains(t, e.Message, "KiB of notices")
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'DO $$ BEGIN LOOP RAISE NOTICE%'`).Scan(&n))
		return n == 0
	}, 30*time.Second, 50*time.Millisecond, "the server's statement ended with the call")

	// Notices of a size that makes sense pass.
	for range 3 {
		_, e = query(t, src, tg.URL, `DO $$ BEGIN FOR i IN 1..50 LOOP RAISE NOTICE '%', repeat('n', 10000); END LOOP; END $$`)
		require.Nil(t, e)
	}
}
