package database

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/policy"
)

// Why a result was cut short.
const (
	TruncatedByRows  = "max_rows"
	TruncatedByBytes = "max_bytes"
)

// MaxMessageBytes bounds what is read of one message of a database's
// server, and so of one row: a result keeps MaxResultBytes (10 KiB) at
// most, a first row up to this size is read and shortened to fit, and a
// larger one is not read at all (result_too_large) rather than held in
// memory whole. A larger row after the first ends the result as the
// byte budget does.
const MaxMessageBytes = 256 << 10

// QueryResult is the result of query.
type QueryResult struct {
	Columns []Column `json:"columns"`
	// Rows are the rows read, each an array of values in column order:
	// numbers, booleans and JSON as such, null, everything else as text.
	Rows     [][]json.RawMessage `json:"rows"`
	RowCount int                 `json:"row_count"`
	// Command is the statement's command tag (SELECT 3); empty when the
	// result was truncated, as the statement was not read to its end.
	Command     string `json:"command,omitempty"`
	Truncated   bool   `json:"truncated"`
	TruncatedBy string `json:"truncated_by,omitempty"`
}

// Column is a result column.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// typeNames names the result column types pgx knows.
var typeNames = pgtype.NewMap()

// query runs one agent statement with text parameters whose types the
// server infers, and reads at most max_rows rows and the byte budget. The
// extended protocol takes exactly one statement, so "COMMIT; INSERT ..."
// is refused by the server. When a cap is reached, the statement is
// abandoned by cancelling its context, which drops the connection, rather
// than read to its end.
func (s *source) query(ctx context.Context, tx pgx.Tx, sql string, args [][]byte) (*QueryResult, error) {
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	rr := tx.Conn().PgConn().ExecParams(qctx, sql, args, nil, nil, nil)
	fields := rr.FieldDescriptions()
	res := &QueryResult{Columns: make([]Column, len(fields)), Rows: [][]json.RawMessage{}}
	for i, f := range fields {
		res.Columns[i] = Column{Name: f.Name, Type: typeName(f.DataTypeOID)}
	}
	header, _ := marshal(res.Columns)
	budget := s.client.cfg.MaxResultBytes - len(header) - 128
	used := 0
	for rr.NextRow() {
		if len(res.Rows) == s.db.MaxRows {
			res.Truncated, res.TruncatedBy = true, TruncatedByRows
			break
		}
		row := make([]json.RawMessage, len(fields))
		size := len(row) + 2
		for i, v := range rr.Values() {
			row[i] = jsonValue(fields[i].DataTypeOID, v)
			size += len(row[i])
		}
		// The first row is kept whatever its size: truncation then
		// shortens its values.
		if len(res.Rows) > 0 && used+size > budget {
			res.Truncated, res.TruncatedBy = true, TruncatedByBytes
			break
		}
		res.Rows = append(res.Rows, row)
		used += size
	}
	if res.Truncated {
		cancel()
		_, _ = rr.Close()
	} else {
		tag, err := rr.Close()
		var tooLarge *pgproto3.ExceededMaxBodyLenErr
		if errors.As(err, &tooLarge) && len(res.Rows) > 0 {
			// A row too large to read would not have fit the budget:
			// the result ends there, the connection already dropped.
			res.Truncated, res.TruncatedBy = true, TruncatedByBytes
			res.RowCount = len(res.Rows)
			return res, nil
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "0A000" && tx.Conn().PgConn().TxStatus() == 'I' {
			// feature_not_supported, and the transaction is over: the
			// server refused PREPARE TRANSACTION (see inReadOnlyTx).
			return nil, &executors.Error{Code: CodeQueryError, Message: "PREPARE TRANSACTION is not allowed: each call is one read-only transaction, rolled back when the call ends"}
		}
		if errors.As(err, &pgErr) && pgErr.Code == "57014" && time.Since(start) < s.db.StatementTimeout {
			// query_canceled before the timeout could have: the server
			// says so in its own language, which lc_messages chooses.
			return nil, &cancelledEarlyError{err: pgErr}
		}
		if err != nil {
			return nil, err
		}
		res.Command = tag.String()
	}
	res.RowCount = len(res.Rows)
	return res, nil
}

// queryArgs turns the query's params into text parameters: strings as
// they are, numbers and booleans as their JSON text, objects and arrays as
// compact JSON, null as NULL.
func queryArgs(params []json.RawMessage) ([][]byte, error) {
	args := make([][]byte, len(params))
	for i, p := range params {
		p = bytes.TrimSpace(p)
		switch {
		case len(p) == 0 || string(p) == "null":
			args[i] = nil
		case p[0] == '"':
			var s string
			if err := json.Unmarshal(p, &s); err != nil {
				return nil, &executors.Error{Code: CodeInvalidParams, Message: fmt.Sprintf("params[%d]: %v", i, err)}
			}
			args[i] = []byte(s)
		case p[0] == '{' || p[0] == '[':
			var b bytes.Buffer
			if err := json.Compact(&b, p); err != nil {
				return nil, &executors.Error{Code: CodeInvalidParams, Message: fmt.Sprintf("params[%d]: %v", i, err)}
			}
			args[i] = b.Bytes()
		default: // a number, true or false
			args[i] = append([]byte(nil), p...)
		}
	}
	return args, nil
}

// Type OIDs whose text form is written as JSON of its own.
const (
	oidBool    = 16
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidOID     = 26
	oidJSON    = 114
	oidFloat4  = 700
	oidFloat8  = 701
	oidNumeric = 1700
	oidJSONB   = 3802
)

// jsonValue is a text-format value as JSON: numbers as numbers (NaN and
// infinities as text), booleans as booleans, json and jsonb as the
// document, NULL as null, anything else as a string.
func jsonValue(oid uint32, v []byte) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	switch oid {
	case oidBool:
		if string(v) == "t" {
			return json.RawMessage("true")
		}
		return json.RawMessage("false")
	case oidInt2, oidInt4, oidInt8, oidOID, oidFloat4, oidFloat8, oidNumeric:
		if json.Valid(v) && v[0] != '"' {
			return append(json.RawMessage(nil), v...)
		}
	case oidJSONB:
		return append(json.RawMessage(nil), v...)
	case oidJSON:
		// json keeps the text as written, which may hold \u0000 or a
		// number beyond jsonb's numeric, which the stored (jsonb) result
		// cannot: such a document stays text, whole.
		if policy.StorableAsWritten(v) {
			var b bytes.Buffer
			if json.Compact(&b, v) == nil {
				return b.Bytes()
			}
		}
	}
	s, _ := marshal(string(v))
	return s
}

// marshal is json.Marshal without its HTML escaping: <, > and & stay
// as they are, as the stored result keeps them, rather than take six
// bytes each (\u003c), so that the size a value is counted at against
// the byte budget is the size it has in the result, whether it is text
// or a document copied as the server sent it.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// typeName names a column type: its Postgres name when pgx knows it, else
// its OID.
func typeName(oid uint32) string {
	if t, ok := typeNames.TypeForOID(oid); ok {
		return t.Name
	}
	return "oid:" + strconv.FormatUint(uint64(oid), 10)
}

// Table is one entry of list_tables.
type Table struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	Type   string `json:"type"`
}

// TablesResult is the result of list_tables.
type TablesResult struct {
	Tables []Table `json:"tables"`
	// Truncated: there were more than max_rows, or more than a result
	// keeps (MaxResultBytes).
	Truncated bool `json:"truncated"`
}

// listTables lists the tables and views the database's user has a
// privilege on (information_schema shows only those), max_rows at most,
// and as many as the result keeps whole: more would have the stored
// result shortened, its last table cut, and truncated still false.
func (s *source) listTables(ctx context.Context, tx pgx.Tx, schema *string) (*TablesResult, error) {
	rows, err := tx.Query(ctx, `
		SELECT table_schema::text, table_name::text, lower(table_type::text)
		FROM information_schema.tables
		WHERE ($1::text IS NULL AND table_schema NOT IN ('pg_catalog', 'information_schema'))
		   OR table_schema = $1::text
		ORDER BY 1, 2
		LIMIT $2`, schema, s.db.MaxRows+1)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Table, error) {
		var t Table
		err := r.Scan(&t.Schema, &t.Name, &t.Type)
		return t, err
	})
	if err != nil {
		return nil, err
	}
	res := &TablesResult{Tables: tables}
	if len(tables) > s.db.MaxRows {
		res.Tables, res.Truncated = tables[:s.db.MaxRows], true
	}
	used := len(`{"tables":[],"truncated":false}`)
	for i, t := range res.Tables {
		b, _ := marshal(t)
		used += len(b) + 1
		if used > s.client.cfg.MaxResultBytes {
			res.Tables, res.Truncated = res.Tables[:i], true
			break
		}
	}
	return res, nil
}

// TableDescription is the result of describe_table.
type TableDescription struct {
	Schema     string        `json:"schema"`
	Table      string        `json:"table"`
	Kind       string        `json:"kind"`
	Columns    []TableColumn `json:"columns"`
	PrimaryKey []string      `json:"primary_key"`
	// Truncated: the table has more columns than a result keeps
	// (MaxResultBytes); Columns are the first ones.
	Truncated bool `json:"truncated"`
}

// TableColumn is one column of a described table.
type TableColumn struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Nullable bool    `json:"nullable"`
	Default  *string `json:"default"`
}

// relKinds names pg_class.relkind values of what describe_table describes.
var relKinds = map[string]string{"r": "table", "p": "partitioned table", "v": "view", "m": "materialized view", "f": "foreign table"}

// describeTable describes a table or view: schema given, or the first of
// the search path that has it; the columns a result keeps, and whether
// there were more.
func (s *source) describeTable(ctx context.Context, tx pgx.Tx, schema *string, table string) (*TableDescription, error) {
	var (
		oid  uint32
		kind string
		d    TableDescription
	)
	err := tx.QueryRow(ctx, `
		SELECT c.oid, n.nspname::text, c.relname::text, c.relkind::text
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
		  AND (n.nspname = $1::text OR ($1::text IS NULL AND pg_catalog.pg_table_is_visible(c.oid)))
		LIMIT 1`, schema, table).Scan(&oid, &d.Schema, &d.Table, &kind)
	if err == pgx.ErrNoRows {
		where := "on the search path"
		if schema != nil {
			where = "in schema " + strconv.Quote(*schema)
		}
		return nil, &executors.Error{Code: CodeNotFound, Message: fmt.Sprintf("no table or view %q %s", table, where)}
	}
	if err != nil {
		return nil, err
	}
	d.Kind = relKinds[kind]
	rows, err := tx.Query(ctx, `
		SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
		       pg_catalog.pg_get_expr(ad.adbin, ad.adrelid),
		       COALESCE(a.attnum = ANY (i.indkey), false)
		FROM pg_catalog.pg_attribute a
		LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
		LEFT JOIN pg_catalog.pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, oid)
	if err != nil {
		return nil, err
	}
	d.Columns, d.PrimaryKey = []TableColumn{}, []string{}
	for rows.Next() {
		var (
			c  TableColumn
			pk bool
		)
		if err := rows.Scan(&c.Name, &c.Type, &c.Nullable, &c.Default, &pk); err != nil {
			rows.Close()
			return nil, err
		}
		d.Columns = append(d.Columns, c)
		if pk {
			d.PrimaryKey = append(d.PrimaryKey, c.Name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// As many columns as the result keeps whole: more would have the
	// stored result shortened, its last column cut.
	columns := d.Columns
	d.Columns = []TableColumn{}
	empty, _ := marshal(d)
	used := len(empty)
	for i, c := range columns {
		b, _ := marshal(c)
		used += len(b) + 1
		if used > s.client.cfg.MaxResultBytes {
			columns, d.Truncated = columns[:i], true
			break
		}
	}
	d.Columns = columns
	return &d, nil
}
