package pgtest_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pglaunch/pglaunchtest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m))
}

// TestURL_OnlyTheOwnerConnects: the package's private server lets no other
// local user in: not through the socket, not as the superuser over TCP.
func TestURL_OnlyTheOwnerConnects(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	if pgtest.Server() == nil {
		t.Skip("*** TEST_DATABASE_URL is set: the server is not a private one, so who may connect to it is not pgtest's to check")
	}
	pglaunchtest.RequireOwnerOnly(t, dbURL, pgtest.Server().Port())
}

// TestPasswordURL: a role with a password logs in with the URL, over TCP
// on the private server.
func TestPasswordURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	admin, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close(context.Background()) })
	role := "pgtest_reader_" + strconv.Itoa(os.Getpid())
	_, err = admin.Exec(ctx, `CREATE ROLE `+role+` LOGIN PASSWORD 'reader-pw'`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec(context.Background(), `DROP ROLE `+role)
		require.NoError(t, err)
	})

	conn, err := pgx.Connect(ctx, pgtest.PasswordURL(dbURL, role, "reader-pw"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var user, db string
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_user, current_database()`).Scan(&user, &db))
	require.Equal(t, role, user)
	cfg, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	require.Equal(t, cfg.Database, db)

	_, err = pgx.Connect(ctx, pgtest.PasswordURL(dbURL, role, "wrong"))
	require.Error(t, err)
}

// TestPrivate_RestartKeepsTheURL: a private server restarted under a test
// is reached at the same URL, and only by its owner.
func TestPrivate_RestartKeepsTheURL(t *testing.T) {
	t.Parallel()
	p := pgtest.NewPrivate(t)
	pglaunchtest.RequireOwnerOnly(t, p.URL, 0)
	require.NoError(t, p.Stop())
	_, err := pgx.Connect(t.Context(), p.URL)
	require.Error(t, err, "stopped")
	require.NoError(t, p.Start())
	conn, err := pgx.Connect(t.Context(), p.URL)
	require.NoError(t, err)
	require.NoError(t, conn.Close(t.Context()))
	pglaunchtest.RequireOwnerOnly(t, p.URL, 0)
}
