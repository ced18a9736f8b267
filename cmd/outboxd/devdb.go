package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxd/outboxd/internal/platform/pglaunch"
)

// ensureDevDatabase creates the database dbURL names when its server says
// it does not exist, connecting for that to the same server's maintenance
// database "postgres" with the same role. It reports whether it created
// one. Any other connection failure is left to the pool, which reports it
// as before.
func ensureDevDatabase(ctx context.Context, dbURL string) (bool, error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return false, fmt.Errorf("database.url: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return false, conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return false, nil
	}
	name := cfg.Database
	cfg.Database = "postgres"
	if err := pglaunch.CreateDatabase(ctx, cfg, name); err != nil {
		return false, fmt.Errorf("database %q of database.url (DATABASE_URL) does not exist, and creating it failed "+
			"(through the server's \"postgres\" database, as role %q): %w\n"+
			"Create it (createdb %s), or point DATABASE_URL at a database that exists", name, cfg.User, err, name)
	}
	return true, nil
}
