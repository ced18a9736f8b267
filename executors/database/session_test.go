package database_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestQuery_NoSessionStateReachesTheNextCall: DISCARD ALL, which reset
// the pooled connection after each query, leaves some of a session as it
// is: the seed setseed gave the session's random numbers makes the next
// call's random() known in advance, and a library a statement loaded
// (LOAD, also from a function or a DO block) keeps its hooks. Every
// query now runs on a connection no other call used, and the next one
// gets a new session.
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

	t.Run("LOAD", func(t *testing.T) {
		// A role that may load a library (here the superuser; any role
		// may load those of $libdir/plugins): auto_explain defines its
		// settings when it is loaded.
		admin, err := pgx.Connect(ctx, tg.AdminURL)
		require.NoError(t, err)
		defer admin.Close(ctx)
		role := "super_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
		_, err = admin.Exec(ctx, `CREATE ROLE `+role+` SUPERUSER LOGIN PASSWORD 'super-secret'`)
		require.NoError(t, err)
		t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP ROLE `+role) })
		superURL := pgtest.PasswordURL(tg.AdminURL, role, "super-secret")
		src := newClient(t, &database.Config{MaxConns: 1}).Source(database.Database{ID: uuid.New(), Name: "shop"})
		for _, sql := range []string{
			`LOAD 'auto_explain'`,
			`DO $$ BEGIN EXECUTE 'LOAD ''auto_explain'''; END $$`,
		} {
			_, e := query(t, src, superURL, sql)
			require.Nil(t, e, sql)
			res, e := query(t, src, superURL, `SELECT count(*) FROM pg_settings WHERE name LIKE 'auto_explain.%'`)
			require.Nil(t, e)
			require.Equal(t, `0`, string(res.Rows[0][0]), "the library %s loaded was still loaded in the next call", sql)
		}
	})
}
