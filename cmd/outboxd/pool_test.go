package main

import (
	"context"
	"log/slog"
	"net/url"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestServingPoolSize(t *testing.T) {
	t.Parallel()
	const base = "postgres://outboxd@db/outboxd"
	for _, tt := range []struct {
		name       string
		maxConns   int
		url        string
		role       app.Role
		maxWorkers int
		procs      int
		want       int32
		from       string
	}{
		{name: "APISmallMachine", url: base, role: app.RoleAPI, maxWorkers: 200, procs: 1, want: 8 + 1, from: "role api and worker.max_workers"},
		{name: "APIManyCores", url: base, role: app.RoleAPI, maxWorkers: 200, procs: 16, want: 36 + 1, from: "role api and worker.max_workers"},
		{name: "Worker", url: base, role: app.RoleWorker, maxWorkers: 100, procs: 2, want: 25 + 8, from: "role worker and worker.max_workers"},
		{name: "WorkerCapped", url: base, role: app.RoleWorker, maxWorkers: 1000, procs: 2, want: 48 + 8, from: "role worker and worker.max_workers"},
		{name: "WorkerFewWorkers", url: base, role: app.RoleWorker, maxWorkers: 5, procs: 2, want: 2 + 8, from: "role worker and worker.max_workers"},
		{name: "AllIsTheSum", url: base, role: app.RoleAll, maxWorkers: 200, procs: 2, want: 9 + 56, from: "role all and worker.max_workers"},
		{name: "ConfigKeyWins", maxConns: 40, url: base + "?pool_max_conns=10", role: app.RoleAll, maxWorkers: 200, procs: 2, want: 40, from: "database.max_conns"},
		{name: "URLSettingWinsOverDerived", url: base + "?sslmode=disable&pool_max_conns=10", role: app.RoleAll, maxWorkers: 200, procs: 2, want: 0, from: "database.url pool_max_conns"},
		{name: "KeywordURLSetting", url: "host=db pool_max_conns=10", role: app.RoleWorker, maxWorkers: 200, procs: 2, want: 0, from: "database.url pool_max_conns"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, from, err := servingPoolSize(tt.maxConns, tt.url, tt.role, tt.maxWorkers, tt.procs)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.from, from)
		})
	}

	_, _, err := servingPoolSize(-1, base, app.RoleAll, 200, 2)
	require.ErrorContains(t, err, "database.max_conns must be 0")
}

func TestOpenServingPool_Size(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	open := func(t *testing.T, settings map[string]any, role app.Role, maxWorkers int) int32 {
		t.Helper()
		cmd := &cobra.Command{}
		cmd.Flags().String("config", "", "")
		cmd.SetContext(context.Background())
		v, err := loadConfig(cmd)
		require.NoError(t, err)
		for k, val := range settings {
			v.Set(k, val)
		}
		pool, err := openServingPool(cmd, v, role, maxWorkers, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		defer pool.Close()
		return pool.Config().MaxConns
	}
	withPoolMaxConns, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := withPoolMaxConns.Query()
	q.Set("pool_max_conns", "3")
	withPoolMaxConns.RawQuery = q.Encode()

	require.Equal(t, int32(8+8), open(t, map[string]any{"database.url": dbURL}, app.RoleWorker, 30), "derived")
	require.Equal(t, int32(17), open(t, map[string]any{"database.url": dbURL, "database.max_conns": 17}, app.RoleAll, 200), "database.max_conns")
	require.Equal(t, int32(3), open(t, map[string]any{"database.url": withPoolMaxConns.String()}, app.RoleAll, 200), "pool_max_conns in the URL")
}
