package api

import (
	"fmt"
	"net/http"
	"time"
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

// databaseBusyRetryAfter is the Retry-After of a database_busy answer: the
// organization's other requests hold its connections, and one of them
// usually ends within a second.
const databaseBusyRetryAfter = time.Second

// databaseBusy is the answer when the request waited database.org_conn_wait
// for a connection of its organization's share of the pool
// (dbutil.ErrOrgBusy).
func databaseBusy() *apiError {
	secs := int(databaseBusyRetryAfter.Seconds())
	return &apiError{
		status: http.StatusServiceUnavailable, code: "database_busy",
		message: fmt.Sprintf("this organization's other requests hold all of its share of the database connections (database.max_org_conns); retry in %d seconds", secs),
		details: map[string]any{"retry_after_seconds": secs},
		header:  http.Header{"Retry-After": {fmt.Sprint(secs)}},
	}
}

// databaseTimeout is the answer when Postgres cut one of the request's
// statements at its statement_timeout (database.statement_timeout): a
// lock held by another transaction, or a statement slower than it may
// be. The statement is not named: its text may hold values.
func databaseTimeout() *apiError {
	secs := int(databaseRetryAfter.Seconds())
	return &apiError{
		status: http.StatusServiceUnavailable, code: "database_timeout",
		message: fmt.Sprintf("the database did not answer in time (database.statement_timeout); retry in %d seconds", secs),
		details: map[string]any{"retry_after_seconds": secs},
		header:  http.Header{"Retry-After": {fmt.Sprint(secs)}},
	}
}
