// Package previewstore holds the SQL of invocation previews (migration
// 035).
package previewstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/preview"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Store reads and writes previews on the connection it is given: the
// workers' (owner) pool to write, the tenant pool to read for a caller.
type Store struct {
	q *dbsqlc.Queries
}

// New returns a Store.
func New() *Store { return &Store{q: dbsqlc.New()} }

// Put records the preview of an invocation rendered for its intent digest
// (empty: none), replacing an earlier one. stored is false when the
// invocation's intent is another one by now (its params edited, asked
// again): the rendering is dropped, the job queued then renders anew.
//
// On a db that begins transactions (the workers'), the invocation's row is
// locked first, so that a change of its intent under way (an edit, which
// drops the old preview) commits before the intent is compared: unlocked,
// the comparison read the intent before that change and stored the old
// rendering after the change had dropped it.
func (s *Store) Put(ctx context.Context, db dbutil.DB, org string, invocationID uuid.UUID, digest string, rec *preview.Record) (stored bool, err error) {
	b, ok := db.(dbutil.Beginner)
	if !ok {
		return s.put(ctx, db, org, invocationID, digest, rec)
	}
	err = dbutil.WithTx(ctx, b, func(ctx context.Context, tx pgx.Tx) error {
		_, err := s.q.InvocationGetForUpdate(ctx, tx, dbsqlc.InvocationGetForUpdateParams{ID: invocationID, OrganizationID: org})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // gone: nothing to preview
		}
		if err != nil {
			return fmt.Errorf("locking the invocation: %w", err)
		}
		stored, err = s.put(ctx, tx, org, invocationID, digest, rec)
		return err
	})
	return stored, err
}

func (s *Store) put(ctx context.Context, db dbutil.DB, org string, invocationID uuid.UUID, digest string, rec *preview.Record) (stored bool, err error) {
	var body []byte
	if rec.Preview != nil {
		if body, err = json.Marshal(rec.Preview); err != nil {
			return false, fmt.Errorf("encoding the preview: %w", err)
		}
	}
	var d *string
	if digest != "" {
		d = &digest
	}
	n, err := s.q.PreviewUpsert(ctx, db, dbsqlc.PreviewUpsertParams{
		InvocationID: invocationID, OrganizationID: org, Status: string(rec.Status), Preview: body, Note: rec.Note, IntentDigest: d,
	})
	if err != nil {
		return false, fmt.Errorf("storing the preview: %w", err)
	}
	return n > 0, nil
}

// Get returns the preview of an invocation of org; ok is false while
// none is recorded.
func (s *Store) Get(ctx context.Context, db dbutil.DB, org string, invocationID uuid.UUID) (rec preview.Record, ok bool, err error) {
	row, err := s.q.PreviewGet(ctx, db, dbsqlc.PreviewGetParams{OrganizationID: org, InvocationID: invocationID})
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("reading the preview: %w", err)
	}
	rec = preview.Record{Status: preview.Status(row.Status), Note: row.Note, RenderedAt: row.RenderedAt}
	if len(row.Preview) > 0 {
		if err := json.Unmarshal(row.Preview, &rec.Preview); err != nil {
			return rec, false, fmt.Errorf("decoding the preview: %w", err)
		}
	}
	return rec, true, nil
}

// Reader reads an organization's previews for the API through the tenant
// pool, whose policy (migration 035) shows that organization's only.
type Reader struct {
	Pool  dbutil.DB
	store *Store
}

// NewReader returns a Reader on pool, the tenant pool.
func NewReader(pool dbutil.DB) *Reader { return &Reader{Pool: pool, store: New()} }

// Get returns the preview of one of org's invocations; ok is false while
// none is recorded.
func (r *Reader) Get(ctx context.Context, org string, invocationID uuid.UUID) (preview.Record, bool, error) {
	return r.store.Get(dbutil.WithOrg(ctx, org), r.Pool, org, invocationID)
}

// SlackMessagePosted reports whether the invocation's Slack approval
// message was posted (package slackapproval), so a rendering that comes
// after it has the message updated.
func (s *Store) SlackMessagePosted(ctx context.Context, db dbutil.DB, invocationID uuid.UUID) (bool, error) {
	_, err := s.q.SlackMessageGet(ctx, db, invocationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the Slack approval message: %w", err)
	}
	return true, nil
}
