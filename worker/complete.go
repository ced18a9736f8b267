package worker

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/dbutil"
)

// completer groups the completing transactions of jobs that finish at about
// the same time into one transaction (group commit, as River's batch
// completer does for its own bookkeeping): one commit, one WAL flush and
// one turn at Postgres's notification queue lock for the batch instead of
// one for each job. There is no background goroutine: the first job to
// arrive flushes, and keeps flushing what arrived meanwhile until nothing
// is left; the others wait for their batch's outcome.
type completer struct {
	db       DB
	maxBatch int

	mu       sync.Mutex
	pending  []*completion
	flushing bool
}

// completion is one job's part of a completing transaction.
type completion struct {
	apply func(ctx context.Context, tx pgx.Tx) error
	done  chan error
}

// complete runs apply in a completing transaction shared with the jobs
// finishing at the same time, and returns its outcome. A batch that fails
// is retried one job at a time, so one job's error is never another's.
func (c *completer) complete(ctx context.Context, apply func(ctx context.Context, tx pgx.Tx) error) error {
	item := &completion{apply: apply, done: make(chan error, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, item)
	if c.flushing {
		c.mu.Unlock()
		return <-item.done
	}
	c.flushing = true
	c.mu.Unlock()
	for {
		c.mu.Lock()
		n := min(len(c.pending), c.maxBatch)
		batch := c.pending[:n:n]
		c.pending = c.pending[n:]
		if n == 0 {
			c.flushing = false
			c.mu.Unlock()
			break
		}
		c.mu.Unlock()
		c.flush(context.WithoutCancel(ctx), batch)
	}
	return <-item.done
}

func (c *completer) flush(ctx context.Context, batch []*completion) {
	err := dbutil.WithTx(ctx, c.db, func(ctx context.Context, tx pgx.Tx) error {
		for _, item := range batch {
			if err := item.apply(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, item := range batch {
			item.done <- err
		}
		return
	}
	for _, item := range batch {
		item.done <- dbutil.WithTx(ctx, c.db, item.apply)
	}
}
