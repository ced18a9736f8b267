package pgtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pglaunch"
	"github.com/outboxd/outboxd/migrations"
)

// Private is a Postgres server of one test, for tests that stop or restart
// it under a running outboxd.
type Private struct {
	t   testing.TB
	srv *pglaunch.Server
	// dataDir is the directory asked for; as root the cluster may live in
	// a fallback directory derived from it, which Start must find again.
	dataDir string
	// URL is its migrated database "outboxd".
	URL string
}

// NewPrivate starts a server of the test's own, with a migrated database,
// and removes it when the test ends.
func NewPrivate(t testing.TB) *Private {
	t.Helper()
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "pg")
	srv, err := pglaunch.Start(ctx, &pglaunch.Config{DataDir: dataDir, Fast: true})
	require.NoError(t, err)
	p := &Private{t: t, srv: srv, dataDir: dataDir}
	t.Cleanup(func() {
		_ = p.srv.Stop(context.Background())
		_ = p.srv.RemoveData()
	})
	require.NoError(t, srv.CreateDatabase(ctx, "outboxd"))
	p.URL = srv.URL("outboxd")
	pool, err := pgxpool.New(ctx, p.URL)
	require.NoError(t, err)
	defer pool.Close()
	_, err = migrations.Up(ctx, pool)
	require.NoError(t, err)
	return p
}

// Stop stops the server (a fast shutdown); its data stays.
func (p *Private) Stop() error { return p.srv.Stop(context.Background()) }

// Start starts the stopped server again on the same port and data.
func (p *Private) Start() error {
	srv, err := pglaunch.Start(context.Background(), &pglaunch.Config{DataDir: p.dataDir, Port: p.srv.Port(), Fast: true})
	if err == nil {
		p.srv = srv
	}
	return err
}
