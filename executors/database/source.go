package database

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/policy"
)

// SourcePrefix starts the source id of every database: "database:<uuid>".
const SourcePrefix = "database:"

// The actions of a database.
const (
	ActionQuery         = "query"
	ActionListTables    = "list_tables"
	ActionDescribeTable = "describe_table"
)

// Limits of a database's settings, and their defaults.
const (
	DefaultStatementTimeout = 10 * time.Second
	MinStatementTimeout     = 100 * time.Millisecond
	MaxStatementTimeout     = 5 * time.Minute
	DefaultMaxRows          = 100
	MaxMaxRows              = 10000
)

// Bucket is the rate bucket the jobs of every database take unless a
// request names another. Its scope is the source, so each database gets a
// bucket of this shape to itself; its concurrency matches the pool size,
// so calls wait in the bucket, holding no worker, rather than in the pool.
var Bucket = executors.BucketConfig{Name: "database", Rate: 20, Interval: time.Second, Burst: 20, MaxConcurrency: 4, Scope: executors.ScopeSource}

//go:embed query.schema.json
var querySchema string

//go:embed list_tables.schema.json
var listTablesSchema string

//go:embed describe_table.schema.json
var describeTableSchema string

// SourceID returns the source id of the database with the given id.
func SourceID(id uuid.UUID) string { return SourcePrefix + id.String() }

// ParseSourceID returns the database id in a source id, and false when
// sourceID is not a database's.
func ParseSourceID(sourceID string) (uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(sourceID, SourcePrefix)
	if !ok {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(rest)
	if err != nil || id.String() != rest {
		return uuid.Nil, false
	}
	return id, true
}

// Config configures a Client.
type Config struct {
	// AllowPrivateNetworks lets databases be reached at loopback, private
	// and other internal addresses (connectors.allow_private_networks).
	AllowPrivateNetworks bool
	// MaxConns bounds each database's pool in this process. Default 4.
	MaxConns int32
	// IdleTimeout closes a database's pool after this long without calls.
	// Default 5m.
	IdleTimeout time.Duration
	// MaxResultBytes bounds a result document. Default
	// policy.MaxStoredBytes, what is stored of any result.
	MaxResultBytes int
	// Own is outboxd's own database (IdentityOf its pool): a connection
	// that reaches it is refused. Zero refuses nothing.
	Own Identity
}

// Client runs the actions of every database of a process, holding their
// pools. It is safe for concurrent use; Close it at shutdown.
type Client struct {
	cfg   Config
	pools *pools
}

// New returns a Client; a nil cfg uses the defaults.
func New(cfg *Config) *Client {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	c.MaxConns = cmp.Or(c.MaxConns, 4)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, 5*time.Minute)
	c.MaxResultBytes = cmp.Or(c.MaxResultBytes, policy.MaxStoredBytes)
	return &Client{cfg: c, pools: newPools(&c)}
}

// AllowPrivateNetworks reports whether databases may be at internal
// addresses.
func (c *Client) AllowPrivateNetworks() bool { return c.cfg.AllowPrivateNetworks }

// Drop closes the pool of a database (deleted or changed), if this process
// has one. Calls still running finish first.
func (c *Client) Drop(id uuid.UUID) { c.pools.drop(id) }

// Close closes every pool and refuses calls from then on.
func (c *Client) Close() { c.pools.close() }

// OpenPools returns how many pools are open, for tests and metrics.
func (c *Client) OpenPools() int { return c.pools.count() }

// Database is a registered database, without its URL.
type Database struct {
	ID               uuid.UUID
	Name             string
	StatementTimeout time.Duration
	MaxRows          int
}

// Source returns the action source of db. ExecContext.Token must carry the
// database's URL.
func (c *Client) Source(db Database) executors.Source {
	db.StatementTimeout = min(max(cmp.Or(db.StatementTimeout, DefaultStatementTimeout), MinStatementTimeout), MaxStatementTimeout)
	db.MaxRows = min(max(cmp.Or(db.MaxRows, DefaultMaxRows), 1), MaxMaxRows)
	return &source{client: c, db: db}
}

type source struct {
	client *Client
	db     Database
}

func (s *source) ID() string { return SourceID(s.db.ID) }

// ListActions returns the three actions; it reaches no database.
func (s *source) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	return []executors.Definition{
		{
			ID: ActionQuery,
			Description: fmt.Sprintf("Run one read-only SQL statement on the Postgres database %q and return its columns and rows. "+
				"Writes are refused; the statement is cancelled after %s; at most %d rows (and about %d KiB) come back, "+
				"with truncated: true when there were more. Use $1, $2, ... placeholders with params rather than quoting values.",
				s.db.Name, s.db.StatementTimeout, s.db.MaxRows, s.client.cfg.MaxResultBytes/1024),
			Tier:     executors.TierR1,
			Params:   json.RawMessage(querySchema),
			Delivery: executors.DeliveryExactlyOnce,
		},
		{
			ID:          ActionListTables,
			Description: fmt.Sprintf("List the tables and views of the Postgres database %q that its user may read: schema, name and type.", s.db.Name),
			Tier:        executors.TierR0,
			Params:      json.RawMessage(listTablesSchema),
			Delivery:    executors.DeliveryExactlyOnce,
		},
		{
			ID:          ActionDescribeTable,
			Description: fmt.Sprintf("Describe a table or view of the Postgres database %q: its columns with their types, nullability, defaults and primary key.", s.db.Name),
			Tier:        executors.TierR0,
			Params:      json.RawMessage(describeTableSchema),
			Delivery:    executors.DeliveryExactlyOnce,
		},
	}, nil
}

// Execute runs one action in a read-only transaction on the database
// whose URL is ec.Token.
func (s *source) Execute(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (executors.Result, error) {
	sc := newScrubber(ec.Token)
	var run func(ctx context.Context, tx pgx.Tx) (any, error)
	switch actionID {
	case ActionQuery:
		var p struct {
			SQL    string            `json:"sql"`
			Params []json.RawMessage `json:"params"`
		}
		if err := decodeParams(params, &p); err != nil {
			return executors.Result{}, err
		}
		if strings.TrimSpace(p.SQL) == "" {
			return executors.Result{}, &executors.Error{Code: CodeInvalidParams, Message: "sql is empty"}
		}
		args, err := queryArgs(p.Params)
		if err != nil {
			return executors.Result{}, err
		}
		run = func(ctx context.Context, tx pgx.Tx) (any, error) { return s.query(ctx, tx, p.SQL, args) }
	case ActionListTables:
		var p struct {
			Schema *string `json:"schema"`
		}
		if err := decodeParams(params, &p); err != nil {
			return executors.Result{}, err
		}
		run = func(ctx context.Context, tx pgx.Tx) (any, error) { return s.listTables(ctx, tx, p.Schema) }
	case ActionDescribeTable:
		var p struct {
			Table  string  `json:"table"`
			Schema *string `json:"schema"`
		}
		if err := decodeParams(params, &p); err != nil {
			return executors.Result{}, err
		}
		run = func(ctx context.Context, tx pgx.Tx) (any, error) { return s.describeTable(ctx, tx, p.Schema, p.Table) }
	default:
		return executors.Result{}, &executors.Error{Code: CodeUnknownAction, Cause: executors.ErrUnknownAction,
			Message: fmt.Sprintf("a database has no action %q: use query, list_tables or describe_table", actionID)}
	}

	pool, release, err := s.client.pools.acquire(s.db.ID, ec.Token)
	if err != nil {
		return executors.Result{}, s.classify(ctx, err, sc)
	}
	defer release()
	out, err := s.inReadOnlyTx(ctx, pool, actionID == ActionQuery, run)
	if err != nil {
		return executors.Result{}, s.classify(ctx, err, sc)
	}
	data, err := marshal(out)
	if err != nil {
		return executors.Result{}, &executors.Error{Code: CodeQueryError, Message: "encoding the result: " + sc.clean(err.Error())}
	}
	return executors.Result{Data: policy.Truncate(data, s.client.cfg.MaxResultBytes)}, nil
}

// inReadOnlyTx runs fn in a READ ONLY transaction, which it always rolls
// back. Its first statement sets the local statement_timeout with a
// SELECT, which also takes the transaction's first snapshot: from then on
// Postgres refuses SET TRANSACTION READ WRITE. With agentSQL (fn runs an
// agent's statement), the transaction cannot be prepared (PREPARE
// TRANSACTION), and the connection is closed after the rollback rather
// than going back to the pool (endSession).
func (s *source) inReadOnlyTx(ctx context.Context, pool *pgxpool.Pool, agentSQL bool, fn func(ctx context.Context, tx pgx.Tx) (any, error)) (any, error) {
	// The server cancels a slow statement; this deadline only catches a
	// server that does not answer at all.
	ctx, cancel := context.WithTimeout(ctx, s.db.StatementTimeout+5*time.Second)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if agentSQL {
		defer endSession(ctx, conn) // after the rollback, before the release
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() {
		// Bounded like endSession: a server that stops answering must not
		// hold the call; a failed rollback closes the connection.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(ctx)
	}()
	setup := fmt.Sprintf(`SELECT pg_catalog.set_config('statement_timeout', '%d', true)`, s.db.StatementTimeout.Milliseconds())
	if agentSQL {
		// Postgres refuses to PREPARE TRANSACTION a transaction that
		// created a cursor WITH HOLD: the agent's statement cannot turn
		// the transaction into a prepared one, which the rollback would
		// not end and which would keep its locks and snapshot on the
		// server until someone rolled it back by hand. The cursor goes
		// with the rollback (or, after the agent's COMMIT, the session).
		setup += `; DECLARE outboxd_no_prepare CURSOR WITH HOLD FOR SELECT`
	}
	results, err := tx.Conn().PgConn().Exec(ctx, setup).ReadAll()
	var pgErr *pgconn.PgError
	if agentSQL && len(results) == 1 && results[0].Err == nil && errors.As(err, &pgErr) {
		// The SELECT went through, the server refused the cursor.
		return nil, &holdCursorError{err: pgErr}
	}
	if err != nil {
		return nil, err
	}
	return fn(ctx, tx)
}

// endSession closes the connection an agent's statement ran on, so that
// none of its session reaches the next call nor outlives the call. A
// reset (DISCARD ALL) would end most of it (session advisory locks,
// prepared statements, settings, LISTEN, temporary tables) but not all:
// a library the statement loaded (LOAD, from a function too) keeps its
// hooks, and the seed setseed gave makes the session's next random
// numbers known in advance. The server ends the session's locks as its
// backend exits; the pool opens a new connection for the next call.
func endSession(ctx context.Context, conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
}

// decodeParams decodes params strictly into v; the API validated them
// against the action's schema already, so a failure here is a bug or a
// hand-made job.
func decodeParams(params json.RawMessage, v any) error {
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &executors.Error{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	return nil
}
