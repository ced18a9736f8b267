package database_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
)

// TestQuery_NoSessionStateReachesTheNextCall: DISCARD ALL, which reset
// the pooled connection after each query, leaves some of a session as it
// is: the seed setseed gave the session's random numbers makes the next
// call's random() known in advance, and a library a statement loaded
// (LOAD, also from a function or a DO block) keeps its hooks. Every
// query now runs on a connection no other call used, and the next one
// gets a new session. (LOAD is not tried here: of the roles outboxd
// connects as, which are never superusers, it loads only the libraries
// of $libdir/plugins, and this server has none.)
func TestQuery_NoSessionStateReachesTheNextCall(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()

	t.Run("setseed", func(t *testing.T) {
		// What random() answers first after setseed(0.25).
		direct, err := pgx.Connect(ctx, tg.URL)
		require.NoError(t, err)
		var seeded float64
		_, err = direct.Exec(ctx, `SELECT setseed(0.25)`)
		require.NoError(t, err)
		require.NoError(t, direct.QueryRow(ctx, `SELECT random()`).Scan(&seeded))
		require.NoError(t, direct.Close(ctx))

		// One connection, so that a pooled one would serve every call.
		src := newClient(t, &database.Config{MaxConns: 1}).Source(database.Database{ID: uuid.New(), Name: "shop"})
		_, e := query(t, src, tg.URL, `SELECT setseed(0.25)`)
		require.Nil(t, e)
		res, e := query(t, src, tg.URL, `SELECT random()`)
		require.Nil(t, e)
		var got float64
		require.NoError(t, json.Unmarshal(res.Rows[0][0], &got))
		require.NotEqual(t, seeded, got, "the previous call's seed made this call's random() known")
	})
}
