// Package auditstore stores the audit trail's entries: the one package of
// internal/domain/audit that runs SQL.
package auditstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Store reads and appends entries on the connection it is given.
type Store struct {
	queries *dbsqlc.Queries
}

// New returns a Store.
func New() *Store {
	return &Store{queries: dbsqlc.New()}
}

// Row is one stored entry.
type Row struct {
	Org                                string
	Seq                                int64
	OccurredAt                         time.Time
	ActorSubject, ActorKind, ActorRole string
	ClientAddr                         string
	Action, TargetType, TargetID       string
	Before, After                      string
	PrevHash, Hash                     string
	// Sources are the sources the entry concerns, sorted; empty for an
	// entry of the whole organization. Not hashed.
	Sources []string
}

// LockChain serialises org's writers until tx ends.
func (s *Store) LockChain(ctx context.Context, tx pgx.Tx, org string) error {
	return s.queries.AuditLockChain(ctx, tx, org)
}

// Head returns the seq and hash of org's newest entry: 0 and "" when it
// has none.
func (s *Store) Head(ctx context.Context, tx pgx.Tx, org string) (int64, string, error) {
	head, err := s.queries.AuditHead(ctx, tx, org)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	return head.Seq, head.Hash, nil
}

// Insert appends r.
func (s *Store) Insert(ctx context.Context, tx pgx.Tx, r *Row) error {
	return s.queries.AuditInsert(ctx, tx, dbsqlc.AuditInsertParams{
		OrganizationID: r.Org, Seq: r.Seq, OccurredAt: r.OccurredAt,
		ActorSubject: r.ActorSubject, ActorKind: r.ActorKind, ActorRole: r.ActorRole, ClientAddr: r.ClientAddr,
		Action: r.Action, TargetType: r.TargetType, TargetID: r.TargetID,
		BeforeState: r.Before, AfterState: r.After, PrevHash: r.PrevHash, Hash: r.Hash, Sources: nonNil(r.Sources),
	})
}

// nonNil is sources, or an empty list for nil: the column is never NULL.
func nonNil(sources []string) []string {
	if sources == nil {
		return []string{}
	}
	return sources
}

// ListParams narrow a listing; zero fields match everything.
type ListParams struct {
	Org                                 string
	BeforeSeq                           int64
	Actor, Action, TargetType, TargetID string
	Since, Until                        *time.Time
	// Sources, when not nil, lists only the entries that name one of
	// them (an empty list: none).
	Sources []string
	Limit   int
}

// List returns the entries matching p, newest first. A listing with
// Sources is planned for them on every run (dbutil.CustomPlans): a source
// with few entries is read through its index, one with many newest first.
func (s *Store) List(ctx context.Context, db dbutil.DB, p *ListParams) ([]Row, error) {
	var q dbsqlc.DBTX = db
	if p.Sources != nil {
		q = dbutil.CustomPlans{DBTX: db}
	}
	rows, err := s.queries.AuditList(ctx, q, dbsqlc.AuditListParams{
		OrganizationID: p.Org, BeforeSeq: p.BeforeSeq, Actor: p.Actor, Action: p.Action,
		TargetType: p.TargetType, TargetID: p.TargetID, Since: p.Since, Until: p.Until, Sources: p.Sources, MaxRows: int32(p.Limit),
	})
	if err != nil {
		return nil, err
	}
	return rows2(rows), nil
}

// Export returns at most limit of org's entries after seq afterSeq,
// oldest first.
func (s *Store) Export(ctx context.Context, db dbutil.DB, org string, afterSeq int64, limit int) ([]Row, error) {
	rows, err := s.queries.AuditExport(ctx, db, dbsqlc.AuditExportParams{OrganizationID: org, AfterSeq: afterSeq, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	return rows2(rows), nil
}

func rows2(in []dbsqlc.AuditEntry) []Row {
	out := make([]Row, len(in))
	for i, r := range in {
		out[i] = Row{
			Org: r.OrganizationID, Seq: r.Seq, OccurredAt: r.OccurredAt,
			ActorSubject: r.ActorSubject, ActorKind: r.ActorKind, ActorRole: r.ActorRole, ClientAddr: r.ClientAddr,
			Action: r.Action, TargetType: r.TargetType, TargetID: r.TargetID,
			Before: r.BeforeState, After: r.AfterState, PrevHash: r.PrevHash, Hash: r.Hash, Sources: r.Sources,
		}
	}
	return out
}

// Anchor is where an organization's chain starts once retention deleted
// its oldest entries.
type Anchor struct {
	Org string
	// PrunedThrough is the seq of the newest entry deleted; PrevHash its
	// hash, which the first kept entry names.
	PrunedThrough int64
	PrevHash      string
	// PrunedBefore is the cut-off the deleted entries were older than;
	// PrunedAt when the last were deleted; PrunedTotal how many in all.
	PrunedBefore, PrunedAt time.Time
	PrunedTotal            int64
}

// Anchor returns org's anchor, or nil when none of its entries was ever
// deleted.
func (s *Store) Anchor(ctx context.Context, db dbutil.DB, org string) (*Anchor, error) {
	a, err := s.queries.AuditAnchor(ctx, db, org)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &Anchor{
		Org: a.OrganizationID, PrunedThrough: a.PrunedThrough, PrevHash: a.PrevHash,
		PrunedBefore: a.PrunedBefore, PrunedAt: a.PrunedAt, PrunedTotal: a.PrunedTotal,
	}, nil
}

// Front is one of the oldest entries of a chain: its seq, time and hash.
type Front struct {
	Seq        int64
	OccurredAt time.Time
	Hash       string
}

// Oldest returns at most limit of org's oldest entries, oldest first.
func (s *Store) Oldest(ctx context.Context, db dbutil.DB, org string, limit int) ([]Front, error) {
	rows, err := s.queries.AuditOldest(ctx, db, dbsqlc.AuditOldestParams{OrganizationID: org, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Front, len(rows))
	for i, r := range rows {
		out[i] = Front{Seq: r.Seq, OccurredAt: r.OccurredAt, Hash: r.Hash}
	}
	return out, nil
}

// Prune deletes org's entries through seq a.PrunedThrough and moves its
// anchor there, adding deleted to its total, in tx.
func (s *Store) Prune(ctx context.Context, tx pgx.Tx, a *Anchor, deleted int64) (int64, error) {
	n, err := s.queries.AuditDeleteThrough(ctx, tx, dbsqlc.AuditDeleteThroughParams{OrganizationID: a.Org, Through: a.PrunedThrough})
	if err != nil {
		return 0, err
	}
	err = s.queries.AuditSetAnchor(ctx, tx, dbsqlc.AuditSetAnchorParams{
		OrganizationID: a.Org, PrunedThrough: a.PrunedThrough, PrevHash: a.PrevHash,
		PrunedBefore: a.PrunedBefore, PrunedAt: a.PrunedAt, Deleted: n,
	})
	return n, err
}

// Orgs lists the organizations that have entries.
func (s *Store) Orgs(ctx context.Context, db dbutil.DB) ([]string, error) {
	return s.queries.AuditOrgs(ctx, db)
}
