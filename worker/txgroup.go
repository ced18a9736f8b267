package worker

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/batch"
	"github.com/outboxd/outboxd/internal/dbutil"
)

// txGroup groups the transactions of jobs that reach the same step at about
// the same time (starting, finishing) into one (group commit, as River's
// batch completer does for its own bookkeeping): one commit, one WAL flush
// and one turn at Postgres's notification queue lock for the batch instead
// of one for each job. A batch that fails is retried one job at a time, so
// one job's error is never another's.
type txGroup struct {
	db    DB
	group batch.Group[txFunc, struct{}]
}

type txFunc = func(ctx context.Context, tx pgx.Tx) error

func newTxGroup(db DB, maxBatch int) *txGroup {
	g := &txGroup{db: db}
	g.group.Max = maxBatch
	g.group.Run = g.run
	return g
}

// do runs fn in a transaction shared with the jobs at the same step, and
// returns its outcome.
func (g *txGroup) do(ctx context.Context, fn txFunc) error {
	_, err := g.group.Do(ctx, fn)
	return err
}

func (g *txGroup) run(ctx context.Context, fns []txFunc) []batch.Result[struct{}] {
	out := make([]batch.Result[struct{}], len(fns))
	err := dbutil.WithTx(ctx, g.db, func(ctx context.Context, tx pgx.Tx) error {
		for _, fn := range fns {
			if err := fn(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(fns) == 1 {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	for i, fn := range fns {
		out[i].Err = dbutil.WithTx(ctx, g.db, fn)
	}
	return out
}
