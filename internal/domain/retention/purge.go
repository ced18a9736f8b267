package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/retention/retentionstore"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// PurgeCount is how many rows of one table belong to the organization (a
// dry run), or were deleted (a purge).
type PurgeCount struct {
	Table string
	Rows  int64
}

// Purger removes everything an organization has, through the owner's pool.
type Purger struct {
	pool    DB
	store   *retentionstore.Store
	batch   int
	revoker Revoker
}

// Revoker stores the revocation a purge ends with (revocation.Service):
// it expires as any revocation of every token issued before a time does,
// auth.max_lifetime and auth.leeway after its cut-off (never without a
// maximum lifetime), once every token it refuses has expired.
type Revoker interface {
	RevokeAll(ctx context.Context, org, by string) (revocation.Revocation, error)
}

// NewPurger returns a Purger deleting batch rows per transaction (0:
// DefaultBatch) and revoking the organization's tokens with revoker.
func NewPurger(pool DB, batch int, revoker Revoker) *Purger {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Purger{pool: pool, store: retentionstore.New(), batch: batch, revoker: revoker}
}

// PurgeTables lists the tables an organization's rows are purged from, in
// the order they are purged.
func PurgeTables() []string {
	var out []string
	for _, t := range retentionstore.New().PurgeTables() {
		out = append(out, t.Name)
	}
	return out
}

// Count counts org's rows in every table Purge deletes from, changing
// nothing.
func (p *Purger) Count(ctx context.Context, org string) ([]PurgeCount, error) {
	if org == "" {
		return nil, errors.New("an organization id is required")
	}
	counts, err := p.store.PurgeCounts(ctx, p.pool, org)
	if err != nil {
		return nil, err
	}
	var out []PurgeCount
	for _, t := range p.store.PurgeTables() {
		out = append(out, PurgeCount{Table: t.Name, Rows: counts[t.Name]})
	}
	return out, nil
}

// PurgedBy is who a purge's revocation names as its author.
const PurgedBy = "operator (outboxd org purge)"

// Purge deletes every row of org, table by table in PurgeTables' order,
// in batches of short transactions, and returns how many rows it deleted
// from each table. Rows the organization writes meanwhile may be left:
// pause it and stop its callers first. Purging again finishes the job.
//
// Its token revocations go with the rest, so the purge ends by revoking
// every token of org issued before the second after its deletions
// (returned): a token revoked before, or one of a caller not stopped,
// does not come back to write into the organization. Tokens issued later
// work, for an organization that starts again. The revocation goes once
// every token it refuses has expired (Revoker).
func (p *Purger) Purge(ctx context.Context, org string) ([]PurgeCount, time.Time, error) {
	if org == "" {
		return nil, time.Time{}, errors.New("an organization id is required")
	}
	var out []PurgeCount
	for _, t := range p.store.PurgeTables() {
		var total int64
		for {
			n, err := dbutil.WithTxV(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (int64, error) {
				return t.Delete(ctx, tx, org, p.batch)
			})
			if err != nil {
				return out, time.Time{}, fmt.Errorf("purging %s: %w", t.Name, err)
			}
			total += n
			if n < int64(p.batch) {
				break
			}
		}
		out = append(out, PurgeCount{Table: t.Name, Rows: total})
	}
	r, err := p.revoker.RevokeAll(ctx, org, PurgedBy)
	if err != nil {
		return out, time.Time{}, fmt.Errorf("revoking the organization's tokens: %w", err)
	}
	return out, r.IssuedBefore, nil
}
