package dbutil_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// TestPassing: an error of the database that passes gets its code and
// wait, the same for the REST API and the MCP front door. A request that
// waited out its organization's share is busy, although its error is a
// deadline too (which alone says unavailable); any other error does not
// pass.
func TestPassing(t *testing.T) {
	for _, c := range []struct {
		err  error
		code string
		wait time.Duration
	}{
		{fmt.Errorf("acquiring: %w", fmt.Errorf("%w (%w)", dbutil.ErrOrgBusy, context.DeadlineExceeded)), "database_busy", time.Second},
		{fmt.Errorf("listing: %w", &pgconn.PgError{Code: "57014"}), "database_timeout", 5 * time.Second},
		{fmt.Errorf("listing: %w", &pgconn.PgError{Code: "57P01"}), "database_unavailable", 5 * time.Second},
		{fmt.Errorf("reading: %w", context.DeadlineExceeded), "database_unavailable", 5 * time.Second},
	} {
		code, wait, ok := dbutil.Passing(c.err)
		require.True(t, ok, "%v", c.err)
		require.Equal(t, c.code, code, "%v", c.err)
		require.Equal(t, c.wait, wait, "%v", c.err)
	}
	for _, err := range []error{errors.New("a bug"), &pgconn.PgError{Code: "23505"}} {
		_, _, ok := dbutil.Passing(err)
		require.False(t, ok, "%v", err)
	}
}
