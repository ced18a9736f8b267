package database

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors/database/databasetest"
)

// BenchmarkRoleCheck measures the check every call's connection goes
// through (refusePrivileged, one round trip), on a database without and
// with dblink and a foreign server, whose catalogs it reads.
func BenchmarkRoleCheck(b *testing.B) {
	for _, setup := range []struct{ name, sql string }{
		{"plain", ``},
		{"dblink and a foreign server", `CREATE EXTENSION IF NOT EXISTS dblink;
			REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
			CREATE FOREIGN DATA WRAPPER bench_fdw; CREATE SERVER bench FOREIGN DATA WRAPPER bench_fdw`},
	} {
		b.Run(setup.name, func(b *testing.B) {
			ctx := context.Background()
			tg := databasetest.NewTarget(b)
			if setup.sql != "" {
				admin, err := pgx.Connect(ctx, tg.AdminURL)
				if err != nil {
					b.Fatal(err)
				}
				_, err = admin.Exec(ctx, setup.sql)
				admin.Close(ctx)
				if err != nil {
					b.Fatal(err)
				}
			}
			conn, err := pgx.Connect(ctx, tg.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			for b.Loop() {
				if err := refusePrivileged(ctx, conn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The round trip alone, for comparison.
	b.Run("SELECT 1", func(b *testing.B) {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, databasetest.NewTarget(b).URL)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		var one int
		for b.Loop() {
			if err := conn.QueryRow(ctx, `SELECT 1`, pgx.QueryExecModeExec).Scan(&one); err != nil {
				b.Fatal(err)
			}
		}
	})
}
