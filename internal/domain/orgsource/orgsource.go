// Package orgsource holds what the kinds of source an organization
// registers itself (MCP connectors, databases) share in their CRUD: the
// errors the HTTP layer maps, the checks of names, URLs and ids, and the
// transactions that write a source's row together with its sealed secret.
// Each kind lives in its own package under executors/ and uses this one.
package orgsource

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

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

// Secrets seals the secrets of org-registered sources (a connector's
// secret, a database's URL) in the credential store, under the source's
// id, inside the transaction that writes the source's row.
type Secrets struct {
	Store *credentialstore.Store
}

// Seal stores value as org's credential for sourceID.
func (s Secrets) Seal(ctx context.Context, tx pgx.Tx, org, sourceID, value, by string) error {
	_, err := s.Store.PutTx(ctx, tx, credential.Request{Org: org, Integration: sourceID}, credential.Token{Value: value}, by)
	return err
}

// Drop deletes org's credential for sourceID.
func (s Secrets) Drop(ctx context.Context, tx pgx.Tx, org, sourceID string) error {
	return s.Store.DeleteTx(ctx, tx, credential.Request{Org: org, Integration: sourceID})
}

// Delete deletes a source's row (del answers how many rows it deleted)
// and its secret in one transaction of db; notFound when there was no row.
func (s Secrets) Delete(ctx context.Context, db dbutil.Beginner, org, sourceID string, notFound error,
	del func(ctx context.Context, tx pgx.Tx) (int64, error)) error {
	return dbutil.WithTx(ctx, db, func(ctx context.Context, tx pgx.Tx) error {
		n, err := del(ctx, tx)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound
		}
		return s.Drop(ctx, tx, org, sourceID)
	})
}
