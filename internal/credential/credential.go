// Package credential stores provider tokens sealed at rest and hands them to
// workers at call time. No route or log ever sees a token.
package credential

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/internal/secretbox"
)

var (
	// ErrNotFound is returned when no credential is stored for an integration.
	ErrNotFound = errors.New("no credential stored")
	// ErrUnreadable is returned when a stored credential cannot be opened
	// with the configured secrets.key (the key changed, or the row was
	// tampered with). Store the credential again to fix it.
	ErrUnreadable = errors.New("stored credential cannot be decrypted with secrets.key")
)

// Info is what may be shown about a stored credential: never the token.
type Info struct {
	Integration string    `json:"integration"`
	UserID      string    `json:"user_id,omitempty"`
	UpdatedBy   string    `json:"updated_by"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Store is the encrypted credential store.
type Store struct {
	pool    *pgxpool.Pool
	box     *secretbox.Box
	queries *dbsqlc.Queries
}

// NewStore returns a Store sealing with box.
func NewStore(pool *pgxpool.Pool, box *secretbox.Box) *Store {
	return &Store{pool: pool, box: box, queries: dbsqlc.New()}
}

// Put seals and stores token for the organization's integration. userID is
// "" for the organization's own credential.
func (s *Store) Put(ctx context.Context, org, integration, userID, token, by string) (Info, error) {
	row, err := s.queries.CredentialUpsert(ctx, s.pool, dbsqlc.CredentialUpsertParams{
		OrganizationID: org,
		Integration:    integration,
		UserID:         userID,
		Sealed:         s.box.Seal([]byte(token), additional(org, integration, userID)),
		CreatedBy:      by,
	})
	if err != nil {
		return Info{}, fmt.Errorf("storing credential: %w", err)
	}
	return Info{Integration: row.Integration, UserID: row.UserID, UpdatedBy: row.CreatedBy, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, nil
}

// List returns metadata of the organization's credentials.
func (s *Store) List(ctx context.Context, org string) ([]Info, error) {
	rows, err := s.queries.CredentialList(ctx, s.pool, org)
	if err != nil {
		return nil, fmt.Errorf("listing credentials: %w", err)
	}
	infos := make([]Info, len(rows))
	for i, r := range rows {
		infos[i] = Info{Integration: r.Integration, UserID: r.UserID, UpdatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	return infos, nil
}

// Token returns the token to call integration with. A credential of userID
// is preferred when one is stored; otherwise the organization's is used.
func (s *Store) Token(ctx context.Context, org, integration, userID string) (string, error) {
	candidates := []string{""}
	if userID != "" {
		candidates = []string{userID, ""}
	}
	for _, uid := range candidates {
		row, err := s.queries.CredentialGet(ctx, s.pool, dbsqlc.CredentialGetParams{OrganizationID: org, Integration: integration, UserID: uid})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("loading credential: %w", err)
		}
		plain, err := s.box.Open(row.Sealed, additional(org, integration, uid))
		if err != nil {
			return "", fmt.Errorf("%w (%s)", ErrUnreadable, integration)
		}
		return string(plain), nil
	}
	return "", fmt.Errorf("%w for %s", ErrNotFound, integration)
}

func additional(org, integration, userID string) []byte {
	return []byte(org + "\x00" + integration + "\x00" + userID)
}
