package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// databaseRetryAfter is the Retry-After of a database_unavailable answer: a
// restart or failover usually takes seconds.
const databaseRetryAfter = 5 * time.Second

// databaseUnavailable is the answer when Postgres cannot be reached.
func databaseUnavailable() *apiError {
	secs := int(databaseRetryAfter.Seconds())
	return &apiError{
		status: http.StatusServiceUnavailable, code: "database_unavailable",
		message: fmt.Sprintf("the database is unavailable; retry in %d seconds", secs),
		details: map[string]any{"retry_after_seconds": secs},
		header:  http.Header{"Retry-After": {fmt.Sprint(secs)}},
	}
}

// isDatabaseUnavailable reports whether err says Postgres could not be
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
func isDatabaseUnavailable(err error) bool {
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
