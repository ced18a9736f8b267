package dbutil

import (
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultStatementTimeout is BoundStatements' default.
const DefaultStatementTimeout = 30 * time.Second

// BoundStatements makes the connections of a pool opened from cfg cut a
// statement that runs longer than d (0: DefaultStatementTimeout), lock
// waits included (statement_timeout: SQLSTATE 57014, see TimedOut), so
// that no statement holds a connection for longer. It is a startup
// parameter: it holds from the connection's first statement, whatever
// role it then sets, and a transaction may still set its own (SET LOCAL
// statement_timeout). A transaction left idle is not bounded: the audit
// export keeps its snapshot's open while it writes each batch to a client
// that may be slow (up to a minute a batch).
func BoundStatements(cfg *pgxpool.Config, d time.Duration) {
	if d <= 0 {
		d = DefaultStatementTimeout
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(1, d.Milliseconds()), 10)
}

// TimedOut reports whether err is a statement Postgres cancelled
// (SQLSTATE 57014, query_canceled): one that ran past its
// statement_timeout (BoundStatements), or, rarely, one cancelled on the
// server by someone.
func TimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}
