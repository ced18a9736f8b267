package dbutil

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/dbsqlc"
)

// CustomPlans runs its queries as unnamed statements, which Postgres plans
// for their parameters on every run (pgx still learns each statement's
// parameter types once per connection and remembers them, so a run is one
// round trip). By default pgx prepares each statement once per
// connection, and Postgres moves a prepared statement to a generic plan
// after five runs, costed with the table's size at that moment. A lookup
// by a unique key first prepared on a nearly empty table (a fresh
// database) can keep a plan that reads all of an organization's rows until
// the table is next analyzed; planned each time, it takes the unique
// index. Meant for statements that run once for many items, where planning
// costs little.
type CustomPlans struct{ dbsqlc.DBTX }

// Query runs sql planned for args.
func (c CustomPlans) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.DBTX.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

// QueryRow runs sql planned for args.
func (c CustomPlans) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return c.DBTX.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}
