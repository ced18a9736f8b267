package retention

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/flow"
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
	// sourceBuckets are the rate buckets kept per source, whose rows are
	// keyed by organization and source.
	sourceBuckets []string
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
// buckets are the rate buckets in force (app's Config.RateBuckets), a
// later one of a name redefining an earlier one: their scopes tell whose
// each bucket row is.
func NewPurger(pool DB, batch int, revoker Revoker, buckets []flow.BucketConfig) *Purger {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Purger{pool: pool, store: retentionstore.New(), batch: batch, revoker: revoker, sourceBuckets: sourceBuckets(buckets)}
}

// sourceBuckets returns the names of the buckets kept per source, the
// last definition of each name counting.
func sourceBuckets(buckets []flow.BucketConfig) []string {
	scopes := map[string]flow.Scope{}
	for _, b := range buckets {
		scopes[b.Name] = b.Scope
	}
	out := []string{}
	for name, scope := range scopes {
		if scope == flow.ScopeSource {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// PurgeTables lists the tables an organization's rows are purged from, in
// the order they are purged.
func PurgeTables() []string {
	var out []string
	for _, t := range retentionstore.New().PurgeTables(nil) {
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
	counts, err := p.store.PurgeCounts(ctx, p.pool, org, p.sourceBuckets)
	if err != nil {
		return nil, err
	}
	var out []PurgeCount
	for _, t := range p.store.PurgeTables(p.sourceBuckets) {
		out = append(out, PurgeCount{Table: t.Name, Rows: counts[t.Name]})
	}
	return out, nil
}

// PurgedBy is who a purge's revocation names as its author.
const PurgedBy = "operator (outboxd org purge)"

// Purge deletes every row of org, table by table in PurgeTables' order,
// in batches of short transactions, and returns how many rows it deleted
// from each table; done, if not nil, is told each table's count as soon
// as the table is done, so that a long purge shows how it goes. Rows the
// organization writes meanwhile may be left: pause it and stop its callers
// first. Purging again finishes the job.
//
// Its token revocations go with the rest, so the purge ends by revoking
// every token of org issued before the second after its deletions
// (returned): a token revoked before, or one of a caller not stopped,
// does not come back to write into the organization. Tokens issued later
// work, for an organization that starts again. The revocation goes once
// every token it refuses has expired (Revoker).
func (p *Purger) Purge(ctx context.Context, org string, done func(PurgeCount)) ([]PurgeCount, time.Time, error) {
	if org == "" {
		return nil, time.Time{}, errors.New("an organization id is required")
	}
	var out []PurgeCount
	for _, t := range p.store.PurgeTables(p.sourceBuckets) {
		c := PurgeCount{Table: t.Name}
		for more := true; more; {
			var n int64
			err := dbutil.WithTx(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (err error) {
				n, more, err = t.Delete(ctx, tx, org, p.batch)
				return err
			})
			if err != nil {
				return out, time.Time{}, fmt.Errorf("purging %s: %w", t.Name, err)
			}
			c.Rows += n
		}
		out = append(out, c)
		if done != nil {
			done(c)
		}
	}
	r, err := p.revoker.RevokeAll(ctx, org, PurgedBy)
	if err != nil {
		return out, time.Time{}, fmt.Errorf("revoking the organization's tokens: %w", err)
	}
	return out, r.IssuedBefore, nil
}
