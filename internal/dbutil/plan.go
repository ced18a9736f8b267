package dbutil

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

// IndexPool opens a pool like base, of at most maxConns connections, for
// statements that reach their rows only by key. Its connections plan a
// statement once and keep the plan (plan_cache_mode=force_generic_plan),
// and may plan only index scans and nested loops (sequential and bitmap
// scans, hash and merge joins are off), so the plan they keep is the one
// for a large table even when the table was small as it was made. That is
// what makes keeping it safe, unlike on an ordinary connection (see
// CustomPlans); what it saves is the planning, which costs a statement of
// several relations more than its own work when it touches few rows.
//
// Nested loops join a statement's own intermediate results (its CTEs)
// pairwise, which grows with the square of their rows: meant for
// statements over a few rows.
func IndexPool(ctx context.Context, base *pgxpool.Config, maxConns int32) (*pgxpool.Pool, error) {
	cfg := base.Copy()
	cfg.MaxConns = maxConns
	cfg.MinConns = 0
	// Prepared statements, whatever the URL asks for: the plan is kept
	// with the statement.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	for name, value := range map[string]string{
		"plan_cache_mode":   "force_generic_plan",
		"enable_seqscan":    "off",
		"enable_bitmapscan": "off",
		"enable_hashjoin":   "off",
		"enable_mergejoin":  "off",
	} {
		cfg.ConnConfig.RuntimeParams[name] = value
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}
