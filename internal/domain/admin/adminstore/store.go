// Package adminstore stores what an organization's administration reads
// and writes itself: its pause and the counts of its invocations. It is
// the one package of the administration that runs generated SQL; every
// method works through the API's tenant pool, so the caller gives the
// organization as the database's too (dbutil.WithOrg).
package adminstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Store reads and writes an organization's administration.
type Store struct {
	pool    *pgxpool.Pool
	queries *dbsqlc.Queries
}

// New returns a Store on the API's tenant pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, queries: dbsqlc.New()}
}

// QueueState is how many of an organization's unfinished invocations
// stand in one state, and the oldest one's time and age by the database
// clock.
type QueueState struct {
	State      string
	N          int64
	Oldest     time.Time
	AgeSeconds float64
}

// QueueStates returns org's unfinished invocations by state (pending,
// queued, retrying, running), only the states that have some.
func (s *Store) QueueStates(ctx context.Context, org string) ([]QueueState, error) {
	rows, err := s.queries.OrgQueueStates(ctx, s.pool, org)
	if err != nil {
		return nil, err
	}
	out := make([]QueueState, len(rows))
	for i, r := range rows {
		out[i] = QueueState(r)
	}
	return out, nil
}

// Pause is an organization's pause: since when and by whom.
type Pause struct {
	PausedAt time.Time
	PausedBy string
}

// Paused returns org's pause, and false when it is not paused.
func (s *Store) Paused(ctx context.Context, org string) (Pause, bool, error) {
	p, err := s.queries.OrgPauseGet(ctx, s.pool, org)
	if errors.Is(err, pgx.ErrNoRows) {
		return Pause{}, false, nil
	}
	return Pause{PausedAt: p.PausedAt, PausedBy: p.PausedBy}, err == nil, err
}

// InsertPause pauses org, and returns its pause: the one it already had
// when it was paused.
func (s *Store) InsertPause(ctx context.Context, org, by string) (Pause, error) {
	p, err := s.queries.OrgPauseInsert(ctx, s.pool, dbsqlc.OrgPauseInsertParams{OrganizationID: org, PausedBy: by})
	return Pause{PausedAt: p.PausedAt, PausedBy: p.PausedBy}, err
}

// releaseHeldSQL makes the execute jobs that org's pause beginning at
// paused_at held available now, as River's scheduler would once they were
// due (the caller then wakes the queue's producers). River's table is not
// in sqlc's schema, hence the literal. Under the API's tenant role the
// table shows the organization's own jobs only (migration 021).
const releaseHeldSQL = `
UPDATE river_job SET state = 'available', scheduled_at = now()
WHERE state = 'scheduled' AND kind = 'execute_action'
  AND args->'bucket'->>'org' = $1::text
  AND (metadata->>'org_paused_at')::timestamptz = $2::timestamptz`

// DeletePause ends org's pause and, in the same transaction, makes the
// jobs it held available and wakes the actions queue. It reports whether
// org was paused and how many jobs it released.
func (s *Store) DeletePause(ctx context.Context, org string) (paused bool, released int64, err error) {
	err = dbutil.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		pauses, err := s.queries.OrgPauseDelete(ctx, tx, org)
		if err != nil || len(pauses) == 0 {
			return err
		}
		paused = true
		released, err = s.ReleaseHeld(ctx, tx, Held{Org: org, PausedAt: pauses[0].PausedAt})
		return err
	})
	return paused, released, err
}

// Held names a pause that held jobs: its organization and when it began
// (the jobs' River metadata org_paused_at).
type Held struct {
	Org      string
	PausedAt time.Time
}

// ReleaseHeld makes the execute jobs pause held available now and wakes
// the actions queue, and returns how many it released.
func (s *Store) ReleaseHeld(ctx context.Context, db dbutil.DB, pause Held) (int64, error) {
	tag, err := db.Exec(ctx, releaseHeldSQL, pause.Org, pause.PausedAt)
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() == 0 {
		return 0, nil
	}
	return tag.RowsAffected(), s.queries.RiverWakeQueue(ctx, db, invocation.QueueActions)
}

// Ended returns those of pauses that have ended: their organization is
// not paused, or paused again since (a later pause).
func (s *Store) Ended(ctx context.Context, db dbutil.DB, pauses []Held) ([]Held, error) {
	p := dbsqlc.OrgPausesEndedParams{Orgs: make([]string, len(pauses)), PausedAts: make([]time.Time, len(pauses))}
	for i, h := range pauses {
		p.Orgs[i], p.PausedAts[i] = h.Org, h.PausedAt
	}
	rows, err := s.queries.OrgPausesEnded(ctx, db, p)
	if err != nil {
		return nil, err
	}
	out := make([]Held, len(rows))
	for i, r := range rows {
		out[i] = Held{Org: r.OrganizationID, PausedAt: r.PausedAt}
	}
	return out, nil
}

// InFlight counts an organization's invocations in one unfinished status,
// with the oldest one's creation.
type InFlight struct {
	Status string
	N      int64
	Oldest time.Time
}

// InFlight returns org's invocations that have not ended, by status.
func (s *Store) InFlight(ctx context.Context, org string) ([]InFlight, error) {
	rows, err := s.queries.InvocationInFlight(ctx, s.pool, org)
	if err != nil {
		return nil, err
	}
	out := make([]InFlight, len(rows))
	for i, r := range rows {
		out[i] = InFlight(r)
	}
	return out, nil
}

// Outcome counts an organization's invocations that ended in one status
// in the window starting at WindowStart.
type Outcome struct {
	WindowStart time.Time
	Status      string
	N           int64
}

// OutcomesSince returns how many of org's invocations ended in each status
// since since, per window of width.
func (s *Store) OutcomesSince(ctx context.Context, org string, since time.Time, width time.Duration) ([]Outcome, error) {
	rows, err := s.queries.InvocationOutcomesSince(ctx, s.pool, dbsqlc.InvocationOutcomesSinceParams{
		OrganizationID: org, Since: since, BucketSeconds: width.Seconds(),
	})
	if err != nil {
		return nil, err
	}
	out := make([]Outcome, len(rows))
	for i, r := range rows {
		out[i] = Outcome(r)
	}
	return out, nil
}
