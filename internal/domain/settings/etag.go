package settings

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/etag"
)

// ETag is the entity tag of a setting's value (the modes of a scope, the
// quiet windows, the do-not-contact patterns), as its GET answers it: a
// replacement given an If-Match that names another tag is refused
// (errs.PreconditionFailed).
func ETag(v any) string { return etag.Of(v) }

// replace runs one replacement of a setting under its lock: it reads the
// value before, checks ifMatch against it, writes, reads the value after
// and records the change, all in one transaction. read and write run in
// that transaction; change names the setting for the audit trail, record
// fills in what it records of the values before and after (states, or
// modesChange), and by is its actor when the context names none
// (audit.Internal).
func replace[T any](ctx context.Context, s *Service, org, by, setting, ifMatch string, change audit.Change, record func(c *audit.Change, before, after T),
	read func(ctx context.Context, tx pgx.Tx) (T, error), write func(ctx context.Context, tx pgx.Tx) error,
) (T, error) {
	var after T
	err := s.store.Locked(ctx, org, setting, func(ctx context.Context, tx pgx.Tx) error {
		before, err := read(ctx, tx)
		if err != nil {
			return err
		}
		if current := ETag(before); !etag.Matches(ifMatch, current) {
			return errs.Errorf(errs.PreconditionFailed, "%s changed since they were read: If-Match %s, current ETag %s; read them again and reapply the change",
				strings.ReplaceAll(change.TargetType, "_", " "), ifMatch, current)
		}
		if err := write(ctx, tx); err != nil {
			return err
		}
		if after, err = read(ctx, tx); err != nil {
			return err
		}
		if s.deps.Audit == nil {
			return nil
		}
		change.Org = org
		record(&change, before, after)
		change.Actor = audit.Internal(ctx, by)
		return s.deps.Audit.RecordTx(ctx, tx, &change)
	})
	return after, err
}

// states records the values before and after the replacement whole, as
// show shows them.
func states[T any](show func(T) any) func(c *audit.Change, before, after T) {
	return func(c *audit.Change, before, after T) {
		c.Before, c.After = show(before), show(after)
	}
}

// asIs records a value as it is: its JSON is the setting's own.
func asIs[T any](v T) any { return v }
