package api

import (
	"fmt"
	"net/http"
	"time"
)

// databaseMessages say, by dbutil.Passing's code, why the database could
// not serve the request. A statement cut at its timeout is not named: its
// text may hold values.
var databaseMessages = map[string]string{
	"database_unavailable": "the database is unavailable",
	"database_busy":        "this organization's other requests hold all of its share of the database connections (database.max_org_conns)",
	"database_timeout":     "the database did not answer in time (database.statement_timeout)",
}

// databaseRetry is the 503 of a database error that passes
// (dbutil.Passing): its code, why, and when to retry, in the message,
// the details and Retry-After.
func databaseRetry(code string, retryAfter time.Duration) *apiError {
	secs := int(retryAfter.Seconds())
	return &apiError{
		status: http.StatusServiceUnavailable, code: code,
		message: fmt.Sprintf("%s; retry in %d seconds", databaseMessages[code], secs),
		details: map[string]any{"retry_after_seconds": secs},
		header:  http.Header{"Retry-After": {fmt.Sprint(secs)}},
	}
}
