package dbutil

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says Postgres could not be
// reached or went away, rather than that it refused the request:
//
//   - a failed connection attempt (pgconn.ConnectError), or any other error
//     raised by pgconn itself rather than by the server — they all carry
//     SafeToRetry, and wrap the network and timeout errors of a lost
//     connection;
//   - a closed connection, or one cut in the middle of a message;
//   - a deadline that passed while waiting for a connection or an answer;
//   - a server error of class 08 (connection exception), 57P01–57P03
//     (admin shutdown, crash shutdown, cannot connect now) or 53300 (too
//     many connections).
func Unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "53300":
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08")
	}
	var (
		connectErr *pgconn.ConnectError
		driverErr  interface{ SafeToRetry() bool }
	)
	return errors.As(err, &connectErr) || errors.As(err, &driverErr) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded)
}

// Passing classifies an error of the database that passes, which a
// client may retry after a while with nothing stored meanwhile: its
// organization's share of the pool stayed taken ("database_busy", 1 s:
// one of its requests ends soon; ErrOrgBusy), a statement was cut at its
// statement_timeout ("database_timeout", 5 s; TimedOut), or Postgres
// could not be reached ("database_unavailable", 5 s: a restart or
// failover takes seconds; Unavailable). ok is false for any other error.
// The REST API's 503s and the MCP front door's errors say the same.
func Passing(err error) (code string, retryAfter time.Duration, ok bool) {
	switch {
	case errors.Is(err, ErrOrgBusy): // before Unavailable: it is a deadline too
		return "database_busy", time.Second, true
	case TimedOut(err):
		return "database_timeout", 5 * time.Second, true
	case Unavailable(err):
		return "database_unavailable", 5 * time.Second, true
	}
	return "", 0, false
}
