package dbutil

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
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
	for _, s := range keyedSettings {
		cfg.ConnConfig.RuntimeParams[s.name] = s.value
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// keyedSettings are the planner settings of an IndexPool's connections and
// of a Keyed transaction.
var keyedSettings = []struct{ name, value string }{
	{"plan_cache_mode", "force_generic_plan"},
	{"enable_seqscan", "off"},
	{"enable_bitmapscan", "off"},
	{"enable_hashjoin", "off"},
	{"enable_mergejoin", "off"},
}

// keyedBegin starts a transaction with keyedSettings, in the one round trip
// of the BEGIN.
var keyedBegin = func() string {
	q := "BEGIN"
	for _, s := range keyedSettings {
		q += "; SET LOCAL " + s.name + " = " + s.value
	}
	return q
}()

// Keyed begins, on its pool, transactions planned as an IndexPool's
// connections plan (the settings are local to the transaction): each
// prepared statement run in one is planned once per connection and keeps
// that plan, which reaches rows by index whatever the table's size when it
// was made. For a transaction whose statements read and write only by key
// on a pool that also runs other queries, such as the API's writes on the
// tenant pool. A plan kept is the statement's on that connection: a
// statement also run outside such transactions may be given it there too,
// so keep to statements whose plan by key suits every run.
type Keyed struct{ Pool *pgxpool.Pool }

// Begin starts a transaction with the keyed planner settings.
func (k Keyed) Begin(ctx context.Context) (pgx.Tx, error) {
	return k.Pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: keyedBegin})
}
