package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestEnsureDevDatabase: dev with a DATABASE_URL whose database does not
// exist creates it on the same server, once; a URL it cannot use at all is
// left to the pool, which says why.
func TestEnsureDevDatabase(t *testing.T) {
	t.Parallel()
	base := pgtest.URL(t)
	u, err := url.Parse(base)
	require.NoError(t, err)
	name := fmt.Sprintf("dev_missing_%d", time.Now().UnixNano())
	u.Path = "/" + name
	missing := u.String()
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		require.NoError(t, err)
	})

	_, err = pgx.Connect(t.Context(), missing)
	require.ErrorContains(t, err, "does not exist")

	created, err := ensureDevDatabase(t.Context(), missing)
	require.NoError(t, err)
	require.True(t, created)
	conn, err := pgx.Connect(t.Context(), missing)
	require.NoError(t, err, "the database exists now")
	require.NoError(t, conn.Close(t.Context()))

	created, err = ensureDevDatabase(t.Context(), missing)
	require.NoError(t, err)
	require.False(t, created, "an existing database is used as it is")

	created, err = ensureDevDatabase(t.Context(), "postgres://nobody@127.0.0.1:1/x?connect_timeout=2")
	require.NoError(t, err, "a server that cannot be reached is the pool's to report")
	require.False(t, created)

	_, err = ensureDevDatabase(t.Context(), "postgres://%zz")
	require.ErrorContains(t, err, "database.url")
}

// TestDevWelcome_NamesTheBinaryAndTheApprovalWindow: the commands the
// welcome suggests are the binary `make dev` built, and it says how long
// a request waits for approval.
func TestDevWelcome_NamesTheBinaryAndTheApprovalWindow(t *testing.T) {
	t.Parallel()
	for _, demo := range []bool{true, false} {
		var out strings.Builder
		printDevWelcome(&out, "127.0.0.1:8080", "0123456789abcdef0123", demo, "", 7*time.Minute)
		require.Contains(t, out.String(), "./bin/outboxd queue list")
		require.NotRegexp(t, `(^|[^/])outboxd (queue|dlq|token) `, out.String(), "every command names ./bin/outboxd")
		require.Contains(t, out.String(), "waits for approval, for 7 minutes (approval.interactive_ttl")
		require.Contains(t, out.String(), `claude mcp add --transport http outboxd http://127.0.0.1:8080/mcp --header "Authorization: Bearer $SANDBOX"`)
		require.Contains(t, out.String(), "OUTBOXD_URL=http://127.0.0.1:8080 OUTBOXD_TOKEN=$SANDBOX ./bin/outboxd actions ")
		// With DATABASE_URL (no embedded URL) there is no Postgres of
		// dev's to stop.
		require.NotContains(t, out.String(), "its Postgres")
		require.True(t, strings.HasSuffix(out.String(), "\nCtrl-C stops outboxd.\n"), out.String())
	}
	var out strings.Builder
	printDevWelcome(&out, "127.0.0.1:8080", "0123456789abcdef0123", true, "postgres://postgres@/outboxd?host=/tmp/s", time.Minute)
	require.Contains(t, out.String(), "psql 'postgres://postgres@/outboxd?host=/tmp/s'")
	require.True(t, strings.HasSuffix(out.String(), "\nCtrl-C stops outboxd and its Postgres.\n"), out.String())
	require.Equal(t, "24 hours", spelledDuration(24*time.Hour))
	require.Equal(t, "1 minute", spelledDuration(time.Minute))
	require.Equal(t, "1m30s", spelledDuration(90*time.Second))
}
