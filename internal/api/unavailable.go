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
