// Package feedstore holds the SQL of the feed's LISTEN waiter: the rows of
// event_listeners that list which organizations a process listens to, so
// that only their events are announced (migration 019).
package feedstore

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// Listeners registers one process's listening, through the owner's pool
// (a tenant session would see one organization's listeners only).
type Listeners struct {
	pool    *pgxpool.Pool
	id      uuid.UUID
	queries *dbsqlc.Queries
}

// New returns the registrations of listener id on pool.
func New(pool *pgxpool.Pool, id uuid.UUID) *Listeners {
	return &Listeners{pool: pool, id: id, queries: dbsqlc.New()}
}

// Register lists the listener as listening to org's events for ttl, once
// every transaction that looked for org's listeners without seeing it has
// ended. It waits for them at most lockTimeout, then fails.
func (l *Listeners) Register(ctx context.Context, org string, ttl, lockTimeout time.Duration) error {
	return l.queries.ListenerRegister(ctx, l.pool, dbsqlc.ListenerRegisterParams{
		OrganizationID: org, ListenerID: l.id, TtlSeconds: ttl.Seconds(),
		LockTimeoutMs: int32(lockTimeout.Milliseconds()),
	})
}

// Renew extends the listener's listening to orgs for ttl, re-creating rows
// that went missing, and drops every expired row, its own included.
func (l *Listeners) Renew(ctx context.Context, orgs []string, ttl time.Duration) error {
	return l.queries.ListenersRenew(ctx, l.pool, dbsqlc.ListenersRenewParams{
		ListenerID: l.id, TtlSeconds: ttl.Seconds(), OrganizationIds: orgs,
	})
}

// Drop ends the listener's listening (a process shutting down).
func (l *Listeners) Drop(ctx context.Context) error {
	return l.queries.ListenersDrop(ctx, l.pool, l.id)
}
