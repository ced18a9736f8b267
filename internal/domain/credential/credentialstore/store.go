// Package credentialstore is outboxd's own encrypted credential store: the
// provider tokens organizations store, sealed with secrets.key, and the
// secrets of their registered sources. It reads through the pool or
// transaction it is given, and keeps decrypted tokens in a cache keyed by
// the credentials' version.
package credentialstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// DB is what the store reads and writes through: a pool or a transaction.
type DB interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Store is the encrypted credential store. Which pool a method uses is
// fixed by the method: what the API does for a caller (Put, List,
// Integrations, CallerToken) runs through the tenant pool, as the caller's
// organization; what the workers and the start-up check do (Token,
// CheckKey) through the owner's pool, for any organization.
type Store struct {
	tenant  DB
	owner   DB
	box     *secretbox.Box
	queries *dbsqlc.Queries

	mu    sync.Mutex
	cache map[cacheKey]cachedToken
}

type cacheKey struct{ org, integration, userID string }

type cachedToken struct {
	version time.Time
	token   credential.Token
}

// maxCached bounds the cache of decrypted tokens; past it the cache starts
// over.
const maxCached = 10_000

// New returns a Store sealing with box: tenant is the API's pool (row-level
// security limits it to the organization in its context), owner the
// workers' (pools, or one transaction in tests).
func New(tenant, owner DB, box *secretbox.Box) *Store {
	return &Store{tenant: tenant, owner: owner, box: box, queries: dbsqlc.New(), cache: map[cacheKey]cachedToken{}}
}

// Put seals and stores tok for req's integration: the organization's own
// credential when req.UserID is "", else that user's.
func (s *Store) Put(ctx context.Context, req credential.Request, tok credential.Token, by string) (credential.Info, error) {
	return s.PutTx(ctx, s.tenant, req, tok, by)
}

// PutTx is Put inside the caller's transaction.
func (s *Store) PutTx(ctx context.Context, db DB, req credential.Request, tok credential.Token, by string) (credential.Info, error) {
	row, err := s.queries.CredentialUpsert(ctx, db, dbsqlc.CredentialUpsertParams{
		OrganizationID: req.Org,
		Integration:    req.Integration,
		UserID:         req.UserID,
		Sealed:         s.box.Seal([]byte(tok.Value), Additional(req.Org, req.Integration, req.UserID)),
		TokenKind:      tok.Kind,
		CreatedBy:      by,
	})
	if err != nil {
		return credential.Info{}, fmt.Errorf("storing credential: %w", err)
	}
	return credential.Info{Integration: row.Integration, UserID: row.UserID, TokenKind: row.TokenKind, UpdatedBy: row.CreatedBy, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, nil
}

// DeleteTx deletes req's integration's credentials of req.Org (the
// organization's and its users') inside the caller's transaction.
func (s *Store) DeleteTx(ctx context.Context, db DB, req credential.Request) error {
	return s.queries.CredentialDelete(ctx, db, dbsqlc.CredentialDeleteParams{OrganizationID: req.Org, Integration: req.Integration})
}

// Delete deletes the one credential req names (the organization's when
// req.UserID is "", else that user's) and reports whether there was one.
func (s *Store) Delete(ctx context.Context, req credential.Request) (bool, error) {
	return s.DeleteOneTx(ctx, s.tenant, req)
}

// DeleteOneTx is Delete inside the caller's transaction.
func (s *Store) DeleteOneTx(ctx context.Context, db DB, req credential.Request) (bool, error) {
	n, err := s.queries.CredentialDeleteOne(ctx, db, dbsqlc.CredentialDeleteOneParams{OrganizationID: req.Org, Integration: req.Integration, UserID: req.UserID})
	if err != nil {
		return false, fmt.Errorf("deleting credential: %w", err)
	}
	s.mu.Lock()
	delete(s.cache, cacheKey{req.Org, req.Integration, req.UserID})
	s.mu.Unlock()
	return n > 0, nil
}

// List returns metadata of the organization's credentials.
func (s *Store) List(ctx context.Context, org string) ([]credential.Info, error) {
	rows, err := s.queries.CredentialList(ctx, s.tenant, org)
	if err != nil {
		return nil, fmt.Errorf("listing credentials: %w", err)
	}
	infos := make([]credential.Info, len(rows))
	for i, r := range rows {
		infos[i] = credential.Info{Integration: r.Integration, UserID: r.UserID, TokenKind: r.TokenKind, UpdatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Note: r.Note}
	}
	return infos, nil
}

// Note records note on the stored credential req resolves to (the user's
// when one is stored, else the organization's), unless it was stored after
// req.Version, so a credential replaced since the call is not noted. It
// reports whether the note changed; a Version of zero (no stored
// credential) notes nothing.
func Note(ctx context.Context, db DB, req credential.Request, note string) (bool, error) {
	if req.Version.IsZero() {
		return false, nil
	}
	n, err := dbsqlc.New().CredentialNote(ctx, db, dbsqlc.CredentialNoteParams{
		Note: note, OrganizationID: req.Org, Integration: req.Integration, UserID: req.UserID, Version: req.Version,
	})
	if err != nil {
		return false, fmt.Errorf("noting credential: %w", err)
	}
	return n > 0, nil
}

// Token returns the token to call req's integration with, for the
// workers: the user's credential when one is stored, else the
// organization's. Without a Version, or with refresh, it reads the current
// row; a token rotated with Put is picked up by the next call either way.
func (s *Store) Token(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error) {
	key := cacheKey{req.Org, req.Integration, req.UserID}
	if !req.Version.IsZero() && !refresh {
		s.mu.Lock()
		c, ok := s.cache[key]
		s.mu.Unlock()
		if ok && c.version.Equal(req.Version) {
			return c.token, nil
		}
	}
	tok, err := s.read(ctx, s.owner, req)
	if err == nil && !req.Version.IsZero() {
		s.mu.Lock()
		if len(s.cache) >= maxCached {
			clear(s.cache)
		}
		s.cache[key] = cachedToken{version: req.Version, token: tok}
		s.mu.Unlock()
	}
	return tok, err
}

// CallerToken is Token for the API, as the caller's organization (a
// connector's secret when the API lists its tools); it reads the current
// row.
func (s *Store) CallerToken(ctx context.Context, req credential.Request, _ bool) (credential.Token, error) {
	return s.read(ctx, s.tenant, req)
}

// TokenIn is CallerToken read through db, the caller's transaction (one of
// the tenant pool's, as the caller's organization).
func (s *Store) TokenIn(ctx context.Context, db DB, req credential.Request) (credential.Token, error) {
	return s.read(ctx, db, req)
}

// read loads and opens the credential for req through db.
func (s *Store) read(ctx context.Context, db DB, req credential.Request) (credential.Token, error) {
	candidates := []string{""}
	if req.UserID != "" {
		candidates = []string{req.UserID, ""}
	}
	for _, uid := range candidates {
		row, err := s.queries.CredentialGet(ctx, db, dbsqlc.CredentialGetParams{OrganizationID: req.Org, Integration: req.Integration, UserID: uid})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return credential.Token{}, fmt.Errorf("loading credential: %w", err)
		}
		plain, err := s.box.Open(row.Sealed, Additional(req.Org, req.Integration, uid))
		if err != nil {
			return credential.Token{}, fmt.Errorf("%w (%s)", credential.ErrUnreadable, req.Integration)
		}
		return credential.Token{Value: string(plain), Kind: row.TokenKind}, nil
	}
	return credential.Token{}, errs.Errorf(errs.NotFound, "no credential stored for %s", req.Integration)
}

// CheckKey verifies that the configured secrets.key opens the most recently
// stored credential, so that a process started with a new key on old data
// refuses at once instead of failing every call with ErrUnreadable. A
// database without credentials passes.
func (s *Store) CheckKey(ctx context.Context) error {
	row, err := s.queries.CredentialNewest(ctx, s.owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checking secrets.key: %w", err)
	}
	if _, err := s.box.Open(row.Sealed, Additional(row.OrganizationID, row.Integration, row.UserID)); err != nil {
		with := "without a key id, by the secrets.key of before keyrings"
		if id, ok := secretbox.SealedWith(row.Sealed); ok {
			with = fmt.Sprintf("with key id %q", id)
		}
		return fmt.Errorf("%w (the newest, %s of organization %s, stored %s and sealed %s, does not open with secrets.keys %q)",
			credential.ErrKeyChanged, row.Integration, row.OrganizationID, row.UpdatedAt.Format(time.DateTime), with, s.box.IDs())
	}
	return nil
}

// Integrations lists the integrations with a credential the organization
// (or, with userID, that user) can use.
func (s *Store) Integrations(ctx context.Context, org, userID string) ([]string, error) {
	ids, err := s.queries.CredentialIntegrations(ctx, s.tenant, dbsqlc.CredentialIntegrationsParams{OrganizationID: org, UserID: userID})
	if err != nil {
		return nil, fmt.Errorf("listing credentials: %w", err)
	}
	return ids, nil
}

// Additional is the additional data a credential is sealed with: its row's
// key, so a sealed value moved to another row does not open.
func Additional(org, integration, userID string) []byte {
	return []byte(org + "\x00" + integration + "\x00" + userID)
}
