// Package settings holds an organization's settings: its action modes (org
// and automation overrides), quiet hours, do-not-contact patterns and the
// provider credentials it stores. It checks what it is given and keeps
// the rest to settingsstore, which reads and writes through the API's
// tenant pool, so the database shows it the caller's organization only.
//
// A replacement of a whole setting (the modes of a scope, the quiet
// windows, the do-not-contact patterns) runs under the setting's lock in
// one transaction that compares the caller's If-Match with the current
// value's ETag and records the change in the audit trail
// (internal/domain/audit).
package settings

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/settings/settingsstore"
)

// Deps are the settings' collaborators.
type Deps struct {
	// Pool is the API's tenant pool (dbutil.TenantPool).
	Pool *pgxpool.Pool
	// Credentials stores the provider tokens, through the tenant pool too.
	Credentials *credentialstore.Store
	// Providers are the integrations a credential may be stored for.
	Providers *executors.Registry
	// Flow holds the configured rate buckets (a quiet window's bucket is
	// validated against it); nil disables flow control.
	Flow *flow.Limiter
	// Audit records each replacement in its transaction; nil records
	// nothing.
	Audit audit.Recorder
	// Grants revokes the grants of a source whose credential is stored
	// again or deleted, in that change's transaction; nil revokes none.
	Grants GrantRevoker
}

// GrantRevoker revokes, in tx, the unrevoked grants of an organization's
// source and returns their ids (internal/domain/grant).
type GrantRevoker interface {
	RevokeSource(ctx context.Context, tx pgx.Tx, org, sourceID string) ([]uuid.UUID, error)
}

// Service reads and replaces an organization's settings.
type Service struct {
	deps  Deps
	store *settingsstore.Store
}

// New returns a Service.
func New(deps *Deps) *Service {
	return &Service{deps: *deps, store: settingsstore.New(deps.Pool)}
}
