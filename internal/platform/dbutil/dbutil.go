// Package dbutil holds the one transaction helper the rest of outboxd uses.
package dbutil

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Beginner starts transactions; *pgxpool.Pool and pgx.Tx both satisfy it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// WithTx runs fn in a transaction and commits it when fn returns nil. The
// rollback on error runs with a context that is not cancelled, so a request
// that timed out still releases its locks at once.
func WithTx(ctx context.Context, db Beginner, fn func(ctx context.Context, tx pgx.Tx) error) error {
	_, err := WithTxV(ctx, db, func(ctx context.Context, tx pgx.Tx) (struct{}, error) {
		return struct{}{}, fn(ctx, tx)
	})
	return err
}

// WithTxV is WithTx for functions that return a value.
func WithTxV[T any](ctx context.Context, db Beginner, fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var zero T
	tx, err := db.Begin(ctx)
	if err != nil {
		return zero, err
	}
	defer func() {
		if rbErr := tx.Rollback(context.WithoutCancel(ctx)); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
			_ = rbErr // the original error matters more; the connection is discarded by pgx
		}
	}()
	v, err := fn(ctx, tx)
	if err != nil {
		return zero, err
	}
	if err := tx.Commit(ctx); err != nil {
		return zero, err
	}
	return v, nil
}
