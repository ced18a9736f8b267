package database

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errOwnDatabase is returned for a connection that reached outboxd's own
// database: it holds every organization's invocations, tokens' records
// and sealed credentials, so no agent may read it, whatever the URL that
// led there (another host name, a proxy, a standby of the same cluster).
var errOwnDatabase = errors.New("the database URL leads to outboxd's own database, which agents may never read")

// Identity names one database of one Postgres cluster: the cluster's
// system identifier, which initdb chose (a physical standby shares it),
// and the database's name.
type Identity struct {
	System   string
	Database string
}

// queryRower is what IdentityOf reads with: a pool, a connection or a
// transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// IdentityOf reads the identity of the database q is connected to.
// pg_control_system() is executable by every role unless a server revoked
// it. Every name is pg_catalog's, so that a role's search_path cannot
// lead to functions of its own.
func IdentityOf(ctx context.Context, q queryRower) (Identity, error) {
	var id Identity
	err := q.QueryRow(ctx, `SELECT system_identifier::pg_catalog.text, pg_catalog.current_database() FROM pg_catalog.pg_control_system()`).Scan(&id.System, &id.Database)
	return id, err
}

// refuseOwn is a pool's AfterConnect hook refusing a connection to own.
// A server whose identity cannot be read because the function is revoked
// or missing is not outboxd's own, whose identity could be read at start;
// any other failure (a statement_timeout the role set for itself, say)
// refuses the connection, as the role could cause it.
func refuseOwn(own Identity) func(context.Context, *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		id, err := IdentityOf(ctx, conn)
		var pgErr *pgconn.PgError
		switch {
		case err == nil && id == own:
			return errOwnDatabase
		case err == nil:
			return nil
		case errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "42883"): // insufficient_privilege, undefined_function
			return nil
		}
		return err
	}
}
