package worker

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/pgtest"
)

// TestTxGroup_GroupsAndIsolates completes many jobs at once: they share
// transactions, every one commits, and one that fails fails alone.
func TestTxGroup_GroupsAndIsolates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	_, err := pool.Exec(ctx, `CREATE TABLE done (job int PRIMARY KEY, xid bigint NOT NULL)`)
	require.NoError(t, err)
	c := newTxGroup(pool, 100)

	run := func(from, n, failing int) []error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.do(ctx, func(ctx context.Context, tx pgx.Tx) error {
					if from+i == failing {
						return errors.New("this job cannot be recorded")
					}
					_, err := tx.Exec(ctx, `INSERT INTO done VALUES ($1, txid_current())`, from+i)
					return err
				})
			}()
		}
		wg.Wait()
		return errs
	}

	for _, err := range run(0, 60, -1) {
		require.NoError(t, err)
	}
	var rows, txs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT xid) FROM done`).Scan(&rows, &txs))
	require.Equal(t, 60, rows)
	require.Less(t, txs, rows, "jobs finishing together share transactions")
	t.Logf("%d jobs recorded in %d transactions", rows, txs)

	errs := run(100, 30, 107)
	for i, err := range errs {
		if i == 7 {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err, "job %d is not held back by another's failure", 100+i)
	}
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM done WHERE job >= 100`).Scan(&rows))
	require.Equal(t, 29, rows)
}
