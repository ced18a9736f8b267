package app

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/retention"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// TestNew_EveryRoleRefusesAnInvalidRetention: retention.* is checked at
// start in every role, not only where retention runs: an API process
// (which shows the settings on the operations page) started with a
// configuration its workers then refused.
func TestNew_EveryRoleRefusesAnInvalidRetention(t *testing.T) {
	t.Parallel()
	// New refuses before it uses the pool, which never connects.
	pool, err := pgxpool.New(t.Context(), "postgres://outboxd@127.0.0.1:1/outboxd")
	require.NoError(t, err)
	defer pool.Close()
	for _, keep := range []retention.Config{
		{AuditEntries: time.Hour},
		{Invocations: -2 * time.Hour},
		{Batch: 1_000_000},
		{Interval: time.Millisecond},
	} {
		for _, role := range []Role{RoleAPI, RoleWorker, RoleAll} {
			cfg := &Config{JWTSecret: "jwt-secret-0123456789", SecretsKey: secretbox.NewKey(), Retention: keep}
			_, err := New(cfg, role, pool, nil)
			require.ErrorContains(t, err, "retention.", "role %s, %+v", role, keep)
		}
	}
}

// An identity provider's ID tokens for the console carry the console's
// client id as their audience: with that id among auth.idp.audience they
// would be accepted as API tokens, so no role starts.
func TestNew_RefusesTheConsoleClientAsAnAPIAudience(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://outboxd@127.0.0.1:1/outboxd")
	require.NoError(t, err)
	defer pool.Close()
	for _, role := range []Role{RoleAPI, RoleWorker, RoleAll} {
		cfg := &Config{JWTSecret: "jwt-secret-0123456789", SecretsKey: secretbox.NewKey()}
		cfg.Auth.IdP.Issuer = "https://login.example.com"
		cfg.Auth.IdP.Audience = []string{"outboxd", "outboxd-console"}
		cfg.Console.ClientID = "outboxd-console"
		_, err := New(cfg, role, pool, nil)
		require.ErrorContains(t, err, "auth.idp.audience lists console.oidc.client_id", "role %s", role)
	}
}

// A negative database.max_org_conns stops the start in every role.
func TestNew_RefusesANegativeOrganizationShare(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://outboxd@127.0.0.1:1/outboxd")
	require.NoError(t, err)
	defer pool.Close()
	for _, role := range []Role{RoleAPI, RoleWorker, RoleAll} {
		cfg := &Config{JWTSecret: "jwt-secret-0123456789", SecretsKey: secretbox.NewKey(), MaxOrgConns: -1}
		_, err := New(cfg, role, pool, nil)
		require.ErrorContains(t, err, "database.max_org_conns must be 0", "role %s", role)
	}
}
