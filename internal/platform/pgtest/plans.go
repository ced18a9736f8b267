package pgtest

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// KeptPlan is what a connection keeps of a sqlc statement it prepared.
type KeptPlan struct {
	// Generic and Custom count the runs of the statement with its generic
	// plan and with one made for their parameters.
	Generic, Custom int64
	// Explain is EXPLAIN EXECUTE of the statement with the given
	// arguments: the plan it keeps (a generic one once it has one).
	Explain string
}

// Querier is a connection or a transaction on one.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Kept reads, on conn, the prepared statement of the sqlc query name and
// explains it with args, a parenthesized list of SQL literals. Explain it
// in a transaction with the planner settings it runs in (a dbutil.Keyed
// one's), or the plan shown may be one made for args.
func Kept(t testing.TB, conn Querier, name, args string) KeptPlan {
	t.Helper()
	ctx := context.Background()
	var stmt string
	var k KeptPlan
	if err := conn.QueryRow(ctx, `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '-- name: ' || $1 || ' %'`, name).Scan(&stmt, &k.Generic, &k.Custom); err != nil {
		t.Fatalf("pgtest: the prepared statement of %s: %v", name, err)
	}
	rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+stmt+args)
	if err != nil {
		t.Fatalf("pgtest: explaining %s: %v", name, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("pgtest: explaining %s: %v", name, err)
	}
	k.Explain = strings.Join(lines, "\n")
	return k
}
