package revocationstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pipeline sends the statements of sqlc's queries in one round trip: Exec
// queues its statement (and answers nothing), Query queues its own, sends
// them all and answers its rows, or the first queued statement's error.
// The server runs them one after the other, each with a snapshot of its
// own in read committed.
type pipeline struct {
	tx    pgx.Tx
	batch pgx.Batch
}

func (p *pipeline) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	p.batch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (p *pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	p.batch.Queue(sql, args...)
	batch := p.batch
	p.batch = pgx.Batch{}
	results := p.tx.SendBatch(ctx, &batch)
	for range batch.Len() - 1 {
		if _, err := results.Exec(); err != nil {
			return nil, errors.Join(err, results.Close())
		}
	}
	rows, err := results.Query()
	if err != nil {
		return nil, errors.Join(err, results.Close())
	}
	return &pipelineRows{Rows: rows, results: results}, nil
}

// QueryRow is not pipelined: only Exec and Query are.
func (p *pipeline) QueryRow(context.Context, string, ...any) pgx.Row {
	return errRow{errors.New("revocationstore: a pipeline answers Exec and Query only")}
}

// pipelineRows are the last statement's rows; closing them ends the
// round trip.
type pipelineRows struct {
	pgx.Rows
	results pgx.BatchResults
	err     error
}

func (r *pipelineRows) Close() {
	r.Rows.Close()
	if r.results != nil {
		r.err = r.results.Close()
		r.results = nil
	}
}

func (r *pipelineRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
