// Package orgsource holds what the kinds of source an organization
// registers itself (MCP connectors, databases) share in their CRUD: the
// errors the HTTP layer maps and the checks of names, URLs and ids; what
// their stores share, such as the transactions that write a source's row
// together with its sealed secret, is orgsourcestore's. Each kind lives in
// its own package under executors/ and uses these.
package orgsource

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxd/outboxd/internal/domain/errs"
)

// GrantRevoker revokes, in tx, the unrevoked grants of an organization's
// source and returns their ids (internal/domain/grant's Service). A source
// given another server, database or secret revokes the grants made for
// the old one in the transaction that changes it.
type GrantRevoker interface {
	RevokeSource(ctx context.Context, tx pgx.Tx, org, sourceID string) ([]uuid.UUID, error)
}

// MaxURLBytes bounds a source's URL.
const MaxURLBytes = 2048

// CheckName checks a source's display name, already trimmed.
func CheckName(name string) error {
	if name == "" || len(name) > 100 {
		return errs.Invalid("name", "name is required (at most 100 characters)")
	}
	return nil
}

// CheckURLLength checks that a source's URL is at most MaxURLBytes long.
func CheckURLLength(url string) error {
	if len(url) > MaxURLBytes {
		return errs.Invalid("url", "url is longer than %d bytes", MaxURLBytes)
	}
	return nil
}

// NotFound is ErrNotFound for the source id of a kind named noun
// ("connector", "database").
func NotFound(noun, id string) error {
	return fmt.Errorf("%w: %s %s", errs.NotFound, noun, id)
}

// ParseID returns the row id in id, a bare UUID or a source id with the
// kind's prefix; NotFound when it is neither.
func ParseID(id, prefix, noun string) (uuid.UUID, error) {
	uid, err := uuid.Parse(strings.TrimPrefix(id, prefix))
	if err != nil {
		return uuid.Nil, NotFound(noun, id)
	}
	return uid, nil
}

// IsConflict reports whether err is a unique violation: another source
// of the organization has the name.
func IsConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// KeepWithinCap keeps a source of an organization just created (and
// committed) only if the organization has at most max of its kind with
// it: count says how many it has now; remove deletes the new one, with a
// context that is not cancelled. Over the cap it returns errs.Conflict,
// naming noun ("connectors") and key (the configuration key of max).
// Counted after the insert, creates racing each other cannot pass the cap
// together: each counts the others committed before it, so that at most
// max are kept (fewer, when racing creates both count each other).
func KeepWithinCap(ctx context.Context, max int, noun, key string,
	count func(ctx context.Context) (int, error), remove func(ctx context.Context) error) error {
	n, err := count(ctx)
	if err == nil && n <= max {
		return nil
	}
	if rerr := remove(context.WithoutCancel(ctx)); rerr != nil {
		return fmt.Errorf("removing one of %s over the cap: %w", noun, rerr)
	}
	if err != nil {
		return fmt.Errorf("counting %s: %w", noun, err)
	}
	return fmt.Errorf("%w: this organization has %d %s, the most it may have (%s): delete one first", errs.Conflict, max, noun, key)
}
