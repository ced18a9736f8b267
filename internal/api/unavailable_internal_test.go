package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestIsDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ClosedPort", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		_, err = pgx.Connect(ctx, "postgres://x@"+addr+"/x?sslmode=disable&connect_timeout=5")
		require.Error(t, err)
		require.True(t, dbutil.Unavailable(fmt.Errorf("loading invocation: %w", err)), "%v", err)
	})
	t.Run("TerminatedBackend", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.Pool(t)
		conn, err := pgx.Connect(ctx, pool.Config().ConnString())
		require.NoError(t, err)
		defer conn.Close(ctx)
		var terminated bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, conn.PgConn().PID()).Scan(&terminated))
		require.True(t, terminated)
		_, err = conn.Exec(ctx, `SELECT 1`)
		require.Error(t, err)
		require.True(t, dbutil.Unavailable(err), "%v", err)
		// The connection is now closed for good.
		_, err = conn.Exec(ctx, `SELECT 1`)
		require.True(t, dbutil.Unavailable(err), "%v", err)
	})
	t.Run("AcquireDeadline", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		_, err := pgtest.Pool(t).Acquire(ctx)
		require.Error(t, err)
		require.True(t, dbutil.Unavailable(err), "%v", err)
	})

	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "57P02"}, true},
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "08001"}, true},
		{&pgconn.PgError{Code: "53300"}, true},
		{fmt.Errorf("inserting: %w", &pgconn.PgError{Code: "23505"}), false},
		{&pgconn.PgError{Code: "22021"}, false},
		{&pgconn.PgError{Code: "40001"}, false},
		{errs.NotFound, false},
		{errors.New("boom"), false},
		{context.Canceled, false},
	} {
		require.Equal(t, tc.want, dbutil.Unavailable(tc.err), "%v", tc.err)
	}
	for _, code := range []string{"54000", "22001", "22021", "22P05"} {
		ae := toAPIError(fmt.Errorf("storing: %w", &pgconn.PgError{Code: code}))
		require.Equal(t, 400, ae.status, code)
		require.Equal(t, "invalid_request", ae.code, code)
	}
	ae := toAPIError(&pgconn.PgError{Code: "57P01"})
	require.Equal(t, 503, ae.status)
	require.Equal(t, "database_unavailable", ae.code)
	require.Equal(t, "5", ae.header.Get("Retry-After"))
}
