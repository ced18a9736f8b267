package database_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func newClient(t *testing.T, cfg *database.Config) *database.Client {
	t.Helper()
	if cfg == nil {
		cfg = &database.Config{}
	}
	cfg.AllowPrivateNetworks = !cfg.AllowPrivateNetworks // tests run on loopback: true unless asked otherwise
	c := database.New(cfg)
	t.Cleanup(c.Close)
	return c
}

func exec(t *testing.T, src executors.Source, rawURL, action string, params any) (json.RawMessage, *executors.Error) {
	t.Helper()
	raw, err := json.Marshal(params)
	require.NoError(t, err)
	res, err := src.Execute(context.Background(), action, raw, executors.ExecContext{Token: rawURL, IdempotencyKey: uuid.NewString()})
	if err != nil {
		var e *executors.Error
		require.True(t, errors.As(err, &e), "an *executors.Error, not %T: %v", err, err)
		return nil, e
	}
	require.True(t, json.Valid(res.Data))
	return res.Data, nil
}

func query(t *testing.T, src executors.Source, rawURL, sql string, args ...any) (*database.QueryResult, *executors.Error) {
	t.Helper()
	params := map[string]any{"sql": sql}
	if len(args) > 0 {
		params["params"] = args
	}
	data, e := exec(t, src, rawURL, database.ActionQuery, params)
	if e != nil {
		return nil, e
	}
	var res database.QueryResult
	require.NoError(t, json.Unmarshal(data, &res))
	return &res, nil
}

func TestQuery_WritesAreRefusedByTheReadOnlyTransaction(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()

	// The role can write: outside outboxd's transaction, this insert lands.
	conn, err := pgx.Connect(ctx, tg.URL)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO shop.items (name) VALUES ('written directly')`)
	require.NoError(t, err)
	conn.Close(ctx)
	require.Equal(t, 4, tg.ItemCount(t))

	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	for _, sql := range []string{
		`INSERT INTO shop.items (name) VALUES ('x')`,
		`UPDATE shop.items SET name = 'y'`,
		`DELETE FROM shop.items`,
		`TRUNCATE shop.items`,
		`DROP TABLE shop.items`,
		`CREATE TABLE public.made (a int)`,
		`SELECT shop.write_item('via a function')`,
		`WITH w AS (INSERT INTO shop.items (name) VALUES ('cte') RETURNING id) SELECT * FROM w`,
		`COPY shop.items FROM STDIN`,
	} {
		_, e := query(t, src, tg.URL, sql)
		require.NotNil(t, e, sql)
		require.Equal(t, database.CodeReadOnly, e.Code, "%s: %v", sql, e)
		require.False(t, e.Retryable, sql)
		require.Contains(t, e.Message, "read-only transaction", sql)
	}

	// Tricks: switching the transaction to read-write is too late once
	// outboxd's first statement ran, several statements in one are
	// refused by the protocol, and changing the session's default does
	// not reach the next call's transaction.
	_, e := query(t, src, tg.URL, `SET TRANSACTION READ WRITE`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code)
	require.Contains(t, e.Message, "read-write mode must be set before any query")
	_, e = query(t, src, tg.URL, `COMMIT; INSERT INTO shop.items (name) VALUES ('after commit')`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code)
	require.Contains(t, e.Message, "multiple commands")
	_, e = query(t, src, tg.URL, `SET TRANSACTION READ WRITE; INSERT INTO shop.items (name) VALUES ('x')`)
	require.NotNil(t, e)
	for _, sql := range []string{`SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE`, `SET default_transaction_read_only = off`, `COMMIT`, `ROLLBACK`, `BEGIN`} {
		_, _ = query(t, src, tg.URL, sql)
		_, e = query(t, src, tg.URL, `INSERT INTO shop.items (name) VALUES ('x')`)
		require.NotNil(t, e, "after %s", sql)
		require.Equal(t, database.CodeReadOnly, e.Code, "after %s", sql)
	}

	require.Equal(t, 4, tg.ItemCount(t), "nothing was written")
	res, e := query(t, src, tg.URL, `SELECT count(*) FROM shop.items`)
	require.Nil(t, e)
	require.Equal(t, `4`, string(res.Rows[0][0]))
}

// A session advisory lock or a prepared statement survives a rollback:
// the connection an agent's statement ran on is closed after the call,
// so no lock outlives its session (blocking the database's own users)
// and no statement reaches the next call.
func TestQuery_SessionStateDoesNotOutliveTheCall(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})

	_, e := query(t, src, tg.URL, `SELECT pg_advisory_lock(4242)`)
	require.Nil(t, e)
	_, e = query(t, src, tg.URL, `PREPARE agent_stmt AS SELECT 1`)
	require.Nil(t, e)

	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	// The lock goes as the session's backend exits, after the call.
	require.Eventually(t, func() bool {
		var got bool
		require.NoError(t, admin.QueryRow(ctx, `SELECT pg_try_advisory_lock(4242)`).Scan(&got))
		return got
	}, 30*time.Second, 20*time.Millisecond, "the agent's advisory lock was released with its session")

	_, e = query(t, src, tg.URL, `EXECUTE agent_stmt`)
	require.NotNil(t, e, "the prepared statement did not reach the next call")
	require.Contains(t, e.Message, "does not exist")

	// Calls go on being served, queries and the others alike.
	for range 3 {
		_, e = exec(t, src, tg.URL, database.ActionListTables, map[string]any{})
		require.Nil(t, e)
		res, e := query(t, src, tg.URL, `SELECT count(*) FROM shop.items`)
		require.Nil(t, e)
		require.Equal(t, `3`, string(res.Rows[0][0]))
		_, e = query(t, src, tg.URL, `INSERT INTO shop.items (name) VALUES ('x')`)
		require.NotNil(t, e)
		require.Equal(t, database.CodeReadOnly, e.Code)
		// A new connection is read-only by default too.
		res, e = query(t, src, tg.URL, `SHOW default_transaction_read_only`)
		require.Nil(t, e)
		require.Equal(t, `"on"`, string(res.Rows[0][0]))
	}
}

func TestQuery_StatementTimeoutCancelsASlowQuery(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop", StatementTimeout: 300 * time.Millisecond})
	_, e := query(t, src, tg.URL, `SELECT pg_sleep(10)`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeStatementTimeout, e.Code, e.Message)
	require.False(t, e.Retryable)
	require.Contains(t, e.Message, "300ms")

	// The call's own deadline, shorter than the statement_timeout, also
	// fails without retry; a cancelled call (a shutdown) is retried.
	slow := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop", StatementTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := slow.Execute(ctx, database.ActionQuery, json.RawMessage(`{"sql":"SELECT pg_sleep(10)"}`), executors.ExecContext{Token: tg.URL})
	var ee *executors.Error
	require.ErrorAs(t, err, &ee)
	require.Equal(t, database.CodeStatementTimeout, ee.Code, ee.Message)
	require.False(t, ee.Retryable)
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err = slow.Execute(ctx, database.ActionQuery, json.RawMessage(`{"sql":"SELECT pg_sleep(10)"}`), executors.ExecContext{Token: tg.URL})
	require.ErrorAs(t, err, &ee)
	require.Equal(t, database.CodeUnavailable, ee.Code, ee.Message)
	require.True(t, ee.Retryable)

	// The connection is fine afterwards.
	res, e := query(t, src, tg.URL, `SELECT 1 AS one`)
	require.Nil(t, e)
	require.Equal(t, "1", string(res.Rows[0][0]))
}

// TestQuery_ServerThatStopsAnsweringReleasesTheCall: a server that stops
// answering after the statement (a paused host, a proxy that stopped
// forwarding) does not hold the call forever in its rollback; the
// connection is given up and the call returns its result.
func TestQuery_ServerThatStopsAnsweringReleasesTheCall(t *testing.T) {
	tg := databasetest.NewTarget(t)
	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	server := u.Host

	// A proxy that forwards until the client sends ROLLBACK, then
	// forwards nothing more and keeps every connection open.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu     sync.Mutex
		conns  []net.Conn
		frozen atomic.Bool
	)
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	t.Cleanup(func() { _ = ln.Close(); closeAll() })
	pipe := func(dst, src net.Conn, toServer bool) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			if toServer && bytes.Contains(buf[:n], []byte("rollback\x00")) {
				frozen.Store(true)
			}
			if frozen.Load() {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", server)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			go pipe(s, c, true)
			go pipe(c, s, false)
		}
	}()
	u.Host = ln.Addr().String()

	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop", StatementTimeout: time.Second})
	done := make(chan *database.QueryResult, 1)
	go func() {
		res, err := src.Execute(context.Background(), database.ActionQuery, json.RawMessage(`{"sql":"SELECT 1 AS one"}`), executors.ExecContext{Token: u.String()})
		var qr *database.QueryResult
		if err == nil {
			_ = json.Unmarshal(res.Data, &qr)
		}
		done <- qr
	}()
	select {
	case res := <-done:
		require.True(t, frozen.Load(), "the proxy saw the rollback")
		require.NotNil(t, res)
		require.Equal(t, "1", string(res.Rows[0][0]))
	case <-time.After(30 * time.Second):
		closeAll()
		t.Fatal("the call still waited for the rollback's answer after 30 s")
	}
}

func TestQuery_RowCap(t *testing.T) {
	tg := databasetest.NewTarget(t)
	c := newClient(t, nil)
	src := c.Source(database.Database{ID: uuid.New(), Name: "shop", MaxRows: 25})
	// Ten million rows: the answer holds the first 25 and says it was cut.
	res, e := query(t, src, tg.URL, `SELECT g AS n FROM generate_series(1, 10000000) g`)
	require.Nil(t, e)
	require.True(t, res.Truncated)
	require.Equal(t, database.TruncatedByRows, res.TruncatedBy)
	require.Equal(t, 25, res.RowCount)
	require.Len(t, res.Rows, 25)
	require.Equal(t, "1", string(res.Rows[0][0]))
	require.Equal(t, "25", string(res.Rows[24][0]))
	require.Empty(t, res.Command)

	// Exactly max_rows rows is not truncated.
	res, e = query(t, src, tg.URL, `SELECT n FROM big WHERE n <= 25`)
	require.Nil(t, e)
	require.False(t, res.Truncated)
	require.Equal(t, 25, res.RowCount)
	require.Equal(t, "SELECT 25", res.Command)
	require.Equal(t, 1, c.OpenPools())
}

func TestQuery_ByteCap(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, &database.Config{MaxResultBytes: 4096}).Source(database.Database{ID: uuid.New(), Name: "shop", MaxRows: 10000})
	data, e := exec(t, src, tg.URL, database.ActionQuery, map[string]any{"sql": `SELECT n, pad FROM big ORDER BY n`})
	require.Nil(t, e)
	require.LessOrEqual(t, len(data), 4096)
	var res database.QueryResult
	require.NoError(t, json.Unmarshal(data, &res))
	require.True(t, res.Truncated)
	require.Equal(t, database.TruncatedByBytes, res.TruncatedBy)
	require.Greater(t, res.RowCount, 10)
	require.Less(t, res.RowCount, 40)
	require.Len(t, res.Rows, res.RowCount)

	// Documents and text with <, > and & (HTML in a jsonb column) are
	// counted as they are stored, not as \u003c: the rows the budget
	// took fit the result whole.
	for _, sql := range []string{
		`SELECT to_jsonb(repeat('<b>&', 50)) AS doc FROM generate_series(1, 100)`,
		`SELECT to_json(repeat('<b>&', 50)) AS doc FROM generate_series(1, 100)`,
		`SELECT repeat('<b>&', 50) AS text FROM generate_series(1, 100)`,
	} {
		data, e = exec(t, src, tg.URL, database.ActionQuery, map[string]any{"sql": sql})
		require.Nil(t, e, sql)
		require.LessOrEqual(t, len(data), 4096, sql)
		require.NotContains(t, string(data), `"_truncated"`, sql)
		require.NotContains(t, string(data), `\u003c`, sql)
		require.NoError(t, json.Unmarshal(data, &res), sql)
		require.Equal(t, database.TruncatedByBytes, res.TruncatedBy, sql)
		require.Greater(t, res.RowCount, 10, sql)
		require.Equal(t, `"`+strings.Repeat("<b>&", 50)+`"`, string(res.Rows[res.RowCount-1][0]), sql)
	}

	// One value larger than the whole budget is shortened structurally.
	data, e = exec(t, src, tg.URL, database.ActionQuery, map[string]any{"sql": `SELECT repeat('y', 100000) AS huge`})
	require.Nil(t, e)
	require.LessOrEqual(t, len(data), 4096)
	require.Contains(t, string(data), `"_truncated":true`)
	require.Contains(t, string(data), `yyyy`)
}

// TestQuery_RowTooLargeIsNotRead: a row larger than MaxMessageBytes is
// not read into memory to be cut to the result's 10 KiB afterwards: as
// the first row it is a clear error, after others it ends the result
// like the byte budget.
func TestQuery_RowTooLargeIsNotRead(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, &database.Config{MaxConns: 1}).Source(database.Database{ID: uuid.New(), Name: "shop"})

	// Just below the cap, the value is read and shortened.
	data, e := exec(t, src, tg.URL, database.ActionQuery, map[string]any{"sql": `SELECT repeat('y', $1::int) AS big`, "params": []int{database.MaxMessageBytes - 100}})
	require.Nil(t, e)
	require.Contains(t, string(data), `"_truncated":true`)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, e = query(t, src, tg.URL, `SELECT repeat('y', 50000000) AS huge`)
	runtime.ReadMemStats(&after)
	require.NotNil(t, e)
	require.Equal(t, database.CodeResultTooLarge, e.Code, e.Message)
	require.False(t, e.Retryable)
	require.Contains(t, e.Message, "larger than 256 KiB")
	require.Contains(t, e.Message, "50000006 bytes")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "the 50 MB value was not read")

	res, e := query(t, src, tg.URL, `SELECT n, CASE WHEN n = 3 THEN repeat('y', 50000000) ELSE 'small' END AS v FROM generate_series(1, 5) n`)
	require.Nil(t, e)
	require.True(t, res.Truncated)
	require.Equal(t, database.TruncatedByBytes, res.TruncatedBy)
	require.Equal(t, `[[1,"small"],[2,"small"]]`, mustJSON(t, res.Rows))
	require.Empty(t, res.Command)

	// The connection that met the row was dropped; the next call gets a
	// new one.
	res, e = query(t, src, tg.URL, `SELECT count(*) FROM shop.items`)
	require.Nil(t, e)
	require.Equal(t, `3`, string(res.Rows[0][0]))
}

func TestQuery_ValuesAndParams(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	res, e := query(t, src, tg.URL,
		`SELECT $1::int + 1 AS n, $2::text AS s, $3::bool AS b, $4::jsonb AS j, $5::text AS nothing,
		        1.5::numeric AS num, 'NaN'::float8 AS nan, '2026-01-02'::date AS d, 'a'::text AS a, 'a'::text AS a`,
		41, "it's", true, map[string]any{"k": []int{1, 2}}, nil)
	require.Nil(t, e)
	require.Equal(t, []database.Column{
		{Name: "n", Type: "int4"}, {Name: "s", Type: "text"}, {Name: "b", Type: "bool"}, {Name: "j", Type: "jsonb"},
		{Name: "nothing", Type: "text"}, {Name: "num", Type: "numeric"}, {Name: "nan", Type: "float8"},
		{Name: "d", Type: "date"}, {Name: "a", Type: "text"}, {Name: "a", Type: "text"},
	}, res.Columns)
	row, _ := json.Marshal(res.Rows[0])
	require.JSONEq(t, `[42, "it's", true, {"k": [1, 2]}, null, 1.5, "NaN", "2026-01-02", "a", "a"]`, string(row))
	require.Equal(t, "SELECT 1", res.Command)

	res, e = query(t, src, tg.URL, `SELECT name FROM shop.items WHERE price > $1 ORDER BY id`, "2")
	require.Nil(t, e)
	require.Equal(t, 1, res.RowCount)
	require.Equal(t, `"pear"`, string(res.Rows[0][0]))

	// The database's own errors come back as they are, without retry.
	_, e = query(t, src, tg.URL, `SELECT * FROM nowhere`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code)
	require.Contains(t, e.Message, `relation "nowhere" does not exist`)
	require.False(t, e.Retryable)
	_, e = query(t, src, tg.URL, `SELECT $1::int`, "four")
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code)
	// More params than placeholders is the agent's mistake, not a
	// connection problem to retry.
	_, e = query(t, src, tg.URL, `SELECT 1`, 1)
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code, e.Message)
	require.False(t, e.Retryable)
}

// TestQuery_JSONNumbersJSONBCannotHold: json keeps its numbers as
// written, and the stored result is jsonb, whose numbers have at most
// 131072 digits before the point and 16383 after: a document with a
// number beyond that (or a \u0000) comes back as text, so the result can
// be stored (it could not, and every attempt ran the statement again).
// The bounds are policy's: a document within them comes back as JSON.
func TestQuery_JSONNumbersJSONBCannotHold(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	data, e := exec(t, src, tg.URL, database.ActionQuery, map[string]any{
		"sql": `SELECT '[1e999999]'::json AS huge, '{"n": 0e-99999}'::json AS tiny, '{"n": -1.5E+3, "s": "1e999999"}'::json AS fine,
		               '[1e5000, 1e-5000]'::json AS big, '{"k\u0000": 1}'::json AS nul, '["\\u0000"]'::json AS escaped`})
	require.Nil(t, e)
	var res database.QueryResult
	require.NoError(t, json.Unmarshal(data, &res))
	require.Equal(t, `["[1e999999]","{\"n\": 0e-99999}",{"n":-1.5E+3,"s":"1e999999"},[1e5000,1e-5000],"{\"k\\u0000\": 1}",["\\u0000"]]`, mustJSON(t, res.Rows[0]))

	conn, err := pgx.Connect(context.Background(), tg.AdminURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), `SELECT $1::text::jsonb`, string(data))
	require.NoError(t, err, "the result can be stored as jsonb")
}

func TestListTablesAndDescribeTable(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})

	data, e := exec(t, src, tg.URL, database.ActionListTables, map[string]any{"schema": "shop"})
	require.Nil(t, e)
	require.JSONEq(t, `{"tables": [
		{"schema": "shop", "name": "cheap", "type": "view"},
		{"schema": "shop", "name": "items", "type": "base table"}
	], "truncated": false}`, string(data))

	data, e = exec(t, src, tg.URL, database.ActionListTables, map[string]any{})
	require.Nil(t, e)
	require.Contains(t, string(data), `{"schema":"public","name":"big","type":"base table"}`)
	require.NotContains(t, string(data), `outboxd_migrations`, "tables the role may not read are not listed")

	data, e = exec(t, src, tg.URL, database.ActionDescribeTable, map[string]any{"schema": "shop", "table": "items"})
	require.Nil(t, e)
	require.JSONEq(t, `{"schema": "shop", "table": "items", "kind": "table", "columns": [
		{"name": "id", "type": "integer", "nullable": false, "default": "nextval('shop.items_id_seq'::regclass)"},
		{"name": "name", "type": "text", "nullable": false, "default": null},
		{"name": "note", "type": "text", "nullable": true, "default": "'none'::text"},
		{"name": "price", "type": "numeric(10,2)", "nullable": true, "default": null}
	], "primary_key": ["id"], "truncated": false}`, string(data))

	data, e = exec(t, src, tg.URL, database.ActionDescribeTable, map[string]any{"table": "big"})
	require.Nil(t, e)
	require.Contains(t, string(data), `"schema":"public","table":"big","kind":"table"`)

	_, e = exec(t, src, tg.URL, database.ActionDescribeTable, map[string]any{"table": "items"})
	require.NotNil(t, e, "shop is not on the search path")
	require.Equal(t, database.CodeNotFound, e.Code)

	_, e = exec(t, src, tg.URL, "drop_everything", map[string]any{})
	require.NotNil(t, e)
	require.ErrorIs(t, e, executors.ErrUnknownAction)

	defs, err := src.ListActions(context.Background(), executors.ExecContext{})
	require.NoError(t, err)
	tiers := map[string]executors.Tier{}
	for _, d := range defs {
		tiers[d.ID] = d.Tier
	}
	require.Equal(t, map[string]executors.Tier{"query": executors.TierR1, "list_tables": executors.TierR0, "describe_table": executors.TierR0}, tiers)
}

func TestPrivateNetworksAreRefusedUnlessAllowed(t *testing.T) {
	tg := databasetest.NewTarget(t)
	guarded := newClient(t, &database.Config{AllowPrivateNetworks: true}) // flipped by newClient: guarded
	require.False(t, guarded.AllowPrivateNetworks())
	src := guarded.Source(database.Database{ID: uuid.New(), Name: "shop"})

	// A literal loopback address, and a name that resolves to one (only
	// the dial guard sees that).
	local, err := url.Parse(tg.URL)
	require.NoError(t, err)
	local.Host = "localhost:" + local.Port()
	for _, u := range []string{tg.URL, local.String()} {
		_, e := query(t, src, u, `SELECT 1`)
		require.NotNil(t, e, u)
		require.Equal(t, database.CodeAddressNotAllowed, e.Code, e.Message)
		require.False(t, e.Retryable)
		require.NotContains(t, e.Message, tg.Password)
	}

	_, err = database.CheckURL(tg.URL, false)
	require.Error(t, err)
	_, err = database.CheckURL(local.String(), false)
	require.NoError(t, err, "a name is checked when dialing")
	target, err := database.CheckURL(tg.URL, true)
	require.NoError(t, err)
	require.Equal(t, local.Port(), strings.Split(target.Host, ":")[1])
}

func TestCheckURL(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://u:p@db.example.com:5432/app?sslmode=require":                    "",
		"postgresql://u@203.0.113.9/app?connect_timeout=5":                          "",
		"postgres://u:p@[fd00:ec2::254]:5432/app":                                   "private",
		"postgres://u:p@10.1.2.3/app":                                               "private",
		"postgres://u:p@169.254.169.254/app":                                        "private",
		"mysql://u:p@db.example.com/app":                                            "postgres://",
		"postgres://db.example.com/app":                                             "no user",
		"postgres://u:p@db.example.com/":                                            "one database",
		"postgres://u:p@db.example.com/app?sslrootcert=/etc/passwd":                 `"sslrootcert" is not supported`,
		"postgres://u:p@db.example.com/app?default_query_exec_mode=simple_protocol": "not supported",
		"postgres://u:p@db.example.com/app?options=-c%20x%3Dy":                      "not supported",
		"postgres://u:p@db.example.com/app?sslmode=maybe":                           "sslmode",
		"postgres://u:p@%2Fvar%2Frun%2Fpostgresql/app":                              "",
		"postgres://u:p@a.example.com,b.example.com/app":                            "one host",
		"postgres://u:p@db.example.com:99999/app":                                   "port",
		"host=db.example.com user=u dbname=app":                                     "postgres://",
		"postgres://u%00options%00-c:p@db.example.com/app":                          "NUL",
		"postgres://u:p%00@db.example.com/app":                                      "NUL",
		"postgres://u:p@db.example.com/app%00":                                      "NUL",
		"postgres://u:p@db.example.com/app?application_name=a%00options%00-c":       "NUL",
	} {
		_, err := database.CheckURL(raw, false)
		switch {
		case want == "":
			if strings.Contains(raw, "%2F") {
				require.Error(t, err, "a Unix socket: %s", raw)
				continue
			}
			require.NoError(t, err, raw)
		default:
			require.Error(t, err, raw)
			require.Contains(t, err.Error(), want, raw)
			require.NotContains(t, err.Error(), ":p@", "the URL is not repeated")
		}
	}
}

func TestErrorsNeverShowTheURL(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})

	// A database that does not exist: the server refuses the login.
	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	u.Path = "/no_such_db_" + tg.Password
	_, e := query(t, src, u.String(), `SELECT 1`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeConnectionRefused, e.Code, e.Message)
	require.NotContains(t, e.Message, tg.Password)

	// Nothing listens: retried later, without the address.
	u.Path, u.Host = "/app", "127.0.0.1:1"
	_, e = query(t, src, u.String(), `SELECT 1`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeUnavailable, e.Code, e.Message)
	require.True(t, e.Retryable)
	require.NotContains(t, e.Message, tg.Password)
	require.NotContains(t, e.Message, "127.0.0.1")

	// A stored URL that breaks the rules is not used.
	bad := strings.Replace(tg.URL, "sslmode=disable", "sslmode=disable&options=-c%20statement_timeout%3D0", 1)
	_, e = query(t, src, bad, `SELECT 1`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeInvalidURL, e.Code, e.Message)
	require.False(t, e.Retryable)
	require.NotContains(t, e.Message, tg.Password)

	// A statement that echoes the password back in an error.
	_, e = query(t, src, tg.URL, `SELECT $1::int`, tg.Password)
	require.NotNil(t, e)
	require.NotContains(t, e.Message, tg.Password)
}

// TestQuery_ErrorsOfASQLASCIIServerAreUTF8: a SQL_ASCII database sends
// its bytes as they are, in errors too ("invalid input syntax for type
// integer" quotes the value): the error is valid UTF-8, which the
// invocation's error can store (it could not, and every attempt ran the
// statement again).
// TestQuery_ServerErrorTextIsBounded: the server's error can quote the
// agent's value whole; the invocation's error, stored and logged, keeps
// 2 KiB of it.
func TestQuery_ServerErrorTextIsBounded(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	_, e := query(t, src, tg.URL, `SELECT repeat('é', 100000)::int`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code)
	require.False(t, e.Retryable)
	require.True(t, utf8.ValidString(e.Message))
	require.LessOrEqual(t, len(e.Message), 2100)
	require.True(t, strings.HasPrefix(e.Message, `invalid input syntax for type integer: "éé`), e.Message[:60])
	require.True(t, strings.HasSuffix(e.Message, `éé… (SQLSTATE 22P02)`), e.Message[len(e.Message)-60:])
}

func TestQuery_ErrorsOfASQLASCIIServerAreUTF8(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	name := "ascii_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	_, err = admin.Exec(ctx, `CREATE DATABASE `+name+` ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `DROP DATABASE `+name+` WITH (FORCE)`) })
	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	u.Path = "/" + name

	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "legacy"})
	_, e := query(t, src, u.String(), `SELECT convert_from('\xe9'::bytea, 'SQL_ASCII')::int`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code)
	require.True(t, utf8.ValidString(e.Message), "%q", e.Message)
	require.Contains(t, e.Message, "invalid input syntax for type integer")
}

func TestPools(t *testing.T) {
	tg := databasetest.NewTarget(t)
	c := newClient(t, &database.Config{IdleTimeout: 200 * time.Millisecond})
	id := uuid.New()
	src := c.Source(database.Database{ID: id, Name: "shop"})

	_, e := query(t, src, tg.URL, `SELECT 1`)
	require.Nil(t, e)
	require.Equal(t, 1, c.OpenPools())
	require.Eventually(t, func() bool { return c.OpenPools() == 0 }, 5*time.Second, 20*time.Millisecond, "closed when idle")

	// A changed URL opens a pool for it and closes the old one.
	_, e = query(t, src, tg.URL, `SELECT 1`)
	require.Nil(t, e)
	other := strings.Replace(tg.URL, "sslmode=disable", "sslmode=disable&application_name=other", 1)
	res, e := query(t, src, other, `SELECT current_setting('application_name')`)
	require.Nil(t, e)
	require.Equal(t, `"other"`, string(res.Rows[0][0]))
	require.Equal(t, 1, c.OpenPools())

	// Dropped, and closed for good.
	c.Drop(id)
	require.Equal(t, 0, c.OpenPools())
	_, e = query(t, src, tg.URL, `SELECT 1`)
	require.Nil(t, e)
	c.Close()
	require.Equal(t, 0, c.OpenPools())
	_, e = query(t, src, tg.URL, `SELECT 1`)
	require.NotNil(t, e)
	require.True(t, e.Retryable)

	// Connections are read-only by default too, and bounded.
	c2 := newClient(t, &database.Config{MaxConns: 2})
	src2 := c2.Source(database.Database{ID: uuid.New(), Name: "shop", StatementTimeout: 2 * time.Second})
	res, e = query(t, src2, tg.URL, `SELECT current_setting('default_transaction_read_only'), current_setting('transaction_read_only')`)
	require.Nil(t, e)
	require.Equal(t, `["on","on"]`, mustJSON(t, res.Rows[0]))
	done := make(chan *executors.Error, 3)
	for range 3 {
		go func() {
			_, e := src2.Execute(context.Background(), database.ActionQuery, json.RawMessage(`{"sql":"SELECT pg_sleep(0.3)"}`), executors.ExecContext{Token: tg.URL})
			var ee *executors.Error
			errors.As(e, &ee)
			done <- ee
		}()
	}
	for range 3 {
		require.Nil(t, <-done)
	}
	conn, err := pgx.Connect(context.Background(), tg.AdminURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE usename = $1`, strings.Split(strings.TrimPrefix(tg.URL, "postgres://"), ":")[0]).Scan(&n))
	require.LessOrEqual(t, n, 2, "at most MaxConns connections")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestOwnDatabaseIsRefused: a registered database that turns out to be
// outboxd's own (the same cluster and database, whatever the URL) is
// refused at connection, before any statement runs; another database of
// the same cluster is not.
func TestOwnDatabaseIsRefused(t *testing.T) {
	ownTarget, other := databasetest.NewTarget(t), databasetest.NewTarget(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ownTarget.URL)
	require.NoError(t, err)
	own, err := database.IdentityOf(ctx, conn)
	conn.Close(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, own.System)

	c := newClient(t, &database.Config{Own: own})
	src := c.Source(database.Database{ID: uuid.New(), Name: "outboxd"})
	// The same database under another host name.
	alias, err := url.Parse(ownTarget.URL)
	require.NoError(t, err)
	host := map[string]string{"localhost": "127.0.0.1"}[alias.Hostname()]
	alias.Host = cmp.Or(host, "localhost") + ":" + alias.Port()
	for _, u := range []string{ownTarget.URL, alias.String()} {
		_, e := exec(t, src, u, database.ActionListTables, map[string]any{})
		require.NotNil(t, e, u)
		require.Equal(t, database.CodeAddressNotAllowed, e.Code)
		require.Contains(t, e.Message, "outboxd's own database")
		require.False(t, e.Retryable)
		res, e := query(t, src, u, `SELECT 1`)
		require.Nil(t, res)
		require.NotNil(t, e)
		require.Equal(t, database.CodeAddressNotAllowed, e.Code)
	}

	res, e := query(t, c.Source(database.Database{ID: uuid.New(), Name: "shop"}), other.URL, `SELECT count(*) FROM shop.items`)
	require.Nil(t, e)
	require.Equal(t, 1, res.RowCount)
}

// TestOwnDatabaseIsRefused_WhateverTheRoleSets: the role of the URL may
// set its own session defaults (ALTER ROLE ... SET, no privilege needed):
// neither a search_path that finds its own pg_control_system() first nor
// a statement_timeout that cancels the identity query lets a connection
// to outboxd's own database through.
func TestOwnDatabaseIsRefused_WhateverTheRoleSets(t *testing.T) {
	ownTarget := databasetest.NewTarget(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, ownTarget.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	own, err := database.IdentityOf(ctx, admin)
	require.NoError(t, err)
	u, err := url.Parse(ownTarget.URL)
	require.NoError(t, err)
	role := pgx.Identifier{u.User.Username()}.Sanitize()
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), `ALTER ROLE `+role+` RESET ALL`) })

	for _, c := range []struct{ name, setup string }{
		{"search_path", `CREATE FUNCTION public.pg_control_system(OUT pg_control_version integer, OUT catalog_version_no integer,
				OUT system_identifier bigint, OUT pg_control_last_modified timestamptz)
			LANGUAGE sql AS 'SELECT 1, 1, 42::bigint, now()';
			CREATE FUNCTION public.current_database() RETURNS name LANGUAGE sql AS 'SELECT ''elsewhere''::name';
			ALTER ROLE ` + role + ` SET search_path = public, pg_catalog`},
		{"statement_timeout", `ALTER ROLE ` + role + ` RESET ALL; ALTER ROLE ` + role + ` SET statement_timeout = 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := admin.Exec(ctx, c.setup)
			require.NoError(t, err)
			src := newClient(t, &database.Config{Own: own}).Source(database.Database{ID: uuid.New(), Name: "outboxd"})
			res, e := query(t, src, ownTarget.URL, `SELECT count(*) FROM pg_catalog.pg_class`)
			require.Nil(t, res)
			require.NotNil(t, e)
		})
	}
}

// TestListTablesAndDescribeTable_CutWhereTheResultEnds: more tables
// than a result keeps (about 10 KiB) were cut by the stored result's
// truncation, which left the last table without its name and truncated
// false; the list now ends with the last table it holds whole, and says
// it was cut. So does a table's description with its columns.
func TestListTablesAndDescribeTable_CutWhereTheResultEnds(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `
		CREATE SCHEMA wide;
		DO $$ BEGIN FOR i IN 1..200 LOOP
			EXECUTE format('CREATE TABLE wide.%I (a int)', 'a_table_with_a_name_as_long_as_they_come_in_real_schemas_' || i);
		END LOOP; END $$;
		GRANT USAGE ON SCHEMA wide TO PUBLIC;
		GRANT SELECT ON ALL TABLES IN SCHEMA wide TO PUBLIC`)
	require.NoError(t, err)

	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop", MaxRows: 1000})
	data, e := exec(t, src, tg.URL, database.ActionListTables, map[string]any{"schema": "wide"})
	require.Nil(t, e)
	require.NotContains(t, string(data), `"_truncated"`, "the result fits as it is")
	var res database.TablesResult
	require.NoError(t, json.Unmarshal(data, &res))
	require.True(t, res.Truncated)
	require.NotEmpty(t, res.Tables)
	require.Less(t, len(res.Tables), 200)
	for _, tb := range res.Tables {
		require.Equal(t, "wide", tb.Schema)
		require.True(t, strings.HasPrefix(tb.Name, "a_table_with"), tb.Name)
		require.Equal(t, "base table", tb.Type)
	}

	// A table of more columns than the result keeps: the first ones,
	// whole, and truncated.
	_, err = admin.Exec(ctx, `DO $$ BEGIN
		EXECUTE 'CREATE TABLE wide.many (' || (SELECT string_agg(format('%I text DEFAULT %L', 'a_column_with_a_long_name_' || i, 'a default'), ', ') FROM generate_series(1, 300) i) || ')';
	END $$; GRANT SELECT ON wide.many TO PUBLIC`)
	require.NoError(t, err)
	data, e = exec(t, src, tg.URL, database.ActionDescribeTable, map[string]any{"schema": "wide", "table": "many"})
	require.Nil(t, e)
	require.NotContains(t, string(data), `"_truncated"`, "the result fits as it is")
	var d database.TableDescription
	require.NoError(t, json.Unmarshal(data, &d))
	require.True(t, d.Truncated)
	require.NotEmpty(t, d.Columns)
	require.Less(t, len(d.Columns), 300)
	for i, c := range d.Columns {
		require.Equal(t, fmt.Sprintf("a_column_with_a_long_name_%d", i+1), c.Name)
		require.Equal(t, "text", c.Type)
	}

	// Within max_rows and the size, the whole list.
	data, e = exec(t, src, tg.URL, database.ActionListTables, map[string]any{"schema": "shop"})
	require.Nil(t, e)
	require.NoError(t, json.Unmarshal(data, &res))
	require.False(t, res.Truncated)
	require.Len(t, res.Tables, 2)
}

// TestQuery_CancelledOnTheServerIsNotATimeout: a statement cancelled by
// someone on the server (pg_cancel_backend: a person, or another session
// of the same role) was said to have run past the statement_timeout.
func TestQuery_CancelledOnTheServerIsNotATimeout(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop", StatementTimeout: time.Minute})

	done := make(chan *executors.Error, 1)
	go func() {
		_, err := src.Execute(ctx, database.ActionQuery, json.RawMessage(`{"sql":"SELECT pg_sleep(50) AS cancel_me"}`), executors.ExecContext{Token: tg.URL})
		var e *executors.Error
		errors.As(err, &e)
		done <- e
	}()
	require.Eventually(t, func() bool {
		var cancelled bool
		err := admin.QueryRow(ctx, `SELECT coalesce(bool_or(pg_cancel_backend(pid)), false) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(50) AS cancel_me%'`).Scan(&cancelled)
		require.NoError(t, err)
		return cancelled
	}, 30*time.Second, 20*time.Millisecond)
	e := <-done
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code, e.Message)
	require.False(t, e.Retryable)
	require.Contains(t, e.Message, "cancelled on the server")
	require.Contains(t, e.Message, "canceling statement due to user request")
	require.NotContains(t, e.Message, "cancelled after the statement_timeout")

	_, te := query(t, newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop", StatementTimeout: 200 * time.Millisecond}), tg.URL, `SELECT pg_sleep(10)`)
	require.NotNil(t, te)
	require.Equal(t, database.CodeStatementTimeout, te.Code, te.Message)
}

// BenchmarkListTables measures a list_tables call on a pooled
// connection, the check of its role included, to set that check's cost
// against (BenchmarkRoleCheck).
func BenchmarkListTables(b *testing.B) {
	tg := databasetest.NewTarget(b)
	c := database.New(&database.Config{AllowPrivateNetworks: true})
	defer c.Close()
	src := c.Source(database.Database{ID: uuid.New(), Name: "shop"})
	params := json.RawMessage(`{"schema":"shop"}`)
	for b.Loop() {
		if _, err := src.Execute(context.Background(), database.ActionListTables, params, executors.ExecContext{Token: tg.URL}); err != nil {
			b.Fatal(err)
		}
	}
}
