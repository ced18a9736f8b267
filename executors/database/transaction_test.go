package database_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
)

// TestQuery_NoPreparedTransactionOutlivesTheCall: on a server that allows
// prepared transactions, PREPARE TRANSACTION would turn the call's
// read-only transaction into one the closing rollback cannot reach,
// holding its locks and its snapshot (which stops vacuum) until someone
// rolls it back by hand. However it is written, it is refused and
// nothing is left behind. A statement that ends the transaction some
// other way, or changes the session's defaults, writes nothing either,
// and leaves nothing for the next call.
func TestQuery_NoPreparedTransactionOutlivesTheCall(t *testing.T) {
	tg := databasetest.NewServerTarget(t, map[string]string{"max_prepared_transactions": "5"})
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	prepared := func() int {
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_xacts`).Scan(&n))
		return n
	}

	// The server takes prepared transactions: outside outboxd, the role
	// leaves one behind.
	conn, err := pgx.Connect(ctx, tg.URL)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `BEGIN READ ONLY; SELECT 1; PREPARE TRANSACTION 'direct'`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	require.Equal(t, 1, prepared())
	_, err = admin.Exec(ctx, `ROLLBACK PREPARED 'direct'`)
	require.NoError(t, err)

	// One connection, so that a pooled one would serve every call
	// below.
	src := newClient(t, &database.Config{MaxConns: 1}).Source(database.Database{ID: uuid.New(), Name: "shop"})
	pid := func() string {
		res, e := query(t, src, tg.URL, `SELECT pg_backend_pid()`)
		require.Nil(t, e)
		return string(res.Rows[0][0])
	}
	first := pid()

	for _, sql := range []string{
		`PREPARE TRANSACTION 'agent'`,
		`prepare transaction 'agent';`,
		`;; PrePare/* a comment /* nested */ */TRANSACTION E'agent\x21' ;`,
		"-- a comment\n\tPREPARE\fTRANSACTION U&'\\0061gent'",
		`DO $$ BEGIN EXECUTE 'PREPARE TRANSACTION ''agent'''; END $$`,
	} {
		_, e := query(t, src, tg.URL, sql)
		require.NotNil(t, e, sql)
		require.Equal(t, database.CodeQueryError, e.Code, "%s: %v", sql, e)
		require.False(t, e.Retryable, sql)
		require.Zero(t, prepared(), "%s left a prepared transaction", sql)
	}
	_, e := query(t, src, tg.URL, `PREPARE TRANSACTION 'agent'`)
	require.Contains(t, e.Message, "PREPARE TRANSACTION is not allowed")

	for _, sql := range []string{
		`COMMIT`, `COMMIT AND CHAIN`, `ROLLBACK`, `ROLLBACK AND CHAIN`, `END`, `ABORT AND CHAIN`,
		`BEGIN`, `START TRANSACTION READ WRITE`, `SET TRANSACTION READ WRITE`,
		`SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE`,
		`SET default_transaction_read_only = off`,
		`SELECT set_config('default_transaction_read_only', 'off', false)`,
		`SET SESSION statement_timeout = 1`,
		`SAVEPOINT s`,
	} {
		_, _ = query(t, src, tg.URL, sql)
		_, e := query(t, src, tg.URL, `INSERT INTO shop.items (name) VALUES ('x')`)
		require.NotNil(t, e, "after %s", sql)
		require.Equal(t, database.CodeReadOnly, e.Code, "after %s: %v", sql, e)
		res, e := query(t, src, tg.URL, `SELECT current_setting('default_transaction_read_only'), current_setting('transaction_read_only'), current_setting('statement_timeout') <> '1ms'`)
		require.Nil(t, e, "after %s", sql)
		require.Equal(t, `["on","on",true]`, mustJSON(t, res.Rows[0]), "after %s", sql)
		require.Zero(t, prepared(), "after %s", sql)
	}
	require.NotEqual(t, first, pid(), "each query runs in a session of its own")
	require.Equal(t, 3, tg.ItemCount(t), "nothing was written")
}
