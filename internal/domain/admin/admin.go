// Package admin is the administration of the outbox: an organization's
// own (its dead letters, its queue and pause, its stats and rate buckets),
// served by the API, and the operator's control of River's queues, which
// every organization shares (`outboxd queue`).
//
// Which pool a method uses is fixed: the organization's methods work
// through the tenant pool (their own queries in adminstore), with the organization they are given as the
// database's (so the command line works as the API does); Queues,
// PauseQueue and ResumeQueue through the owner's pool and River.
package admin

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/internal/domain/admin/adminstore"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
)

// Deps are the administration's collaborators.
type Deps struct {
	// Pool is the tenant pool (dbutil.TenantPool): every
	// organization-scoped read and write.
	Pool *pgxpool.Pool
	// Owner is the owner's pool: River's queues, for every organization.
	Owner *pgxpool.Pool
	// River replays dead letters (on Pool) and pauses River's queues.
	River *river.Client[pgx.Tx]
	// Flow holds the rate buckets; nil disables flow control.
	Flow *flow.Limiter
	// Retention is how long each table keeps finished rows (table → keep,
	// 0 forever; retention.Config.Keep), for the operations page; nil
	// shows no retention.
	Retention map[string]time.Duration
	Logger    *slog.Logger
}

// Service administers the outbox.
type Service struct {
	deps   Deps
	logger *slog.Logger
	own    *adminstore.Store
	store  *invocationstore.Store
}

// New returns a Service.
func New(deps *Deps) *Service {
	return &Service{
		deps:   *deps,
		logger: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)),
		own:    adminstore.New(deps.Pool),
		store:  invocationstore.New(deps.River),
	}
}
