package app

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// TestOwnSecrets_EveryKeyOfTheRing: the workers scrub every key of
// secrets.keys, not only the one that seals.
func TestOwnSecrets_EveryKeyOfTheRing(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://outboxd:db-password@127.0.0.1:1/outboxd")
	require.NoError(t, err)
	defer pool.Close()
	k1, k2 := secretbox.NewKey(), secretbox.NewKey()
	cfg := &Config{JWTSecret: "jwt-secret-0123456789", SecretsKeys: []secretbox.Key{{ID: "new", Secret: k2}, {ID: "old", Secret: k1}}}
	require.ElementsMatch(t, []string{"jwt-secret-0123456789", k2, k1, "db-password"}, ownSecrets(cfg, pool))

	cfg = &Config{JWTSecret: "jwt-secret-0123456789", SecretsKey: k1}
	require.ElementsMatch(t, []string{"jwt-secret-0123456789", k1, "db-password"}, ownSecrets(cfg, pool))

	// Every other secret of outboxd's own configuration.
	cfg = &Config{JWTSecret: "jwt-secret-0123456789", SecretsKey: k1, Auth: auth.Config{PreviousSecret: "jwt-previous-0123456789"},
		Slack: slackapproval.Config{SigningSecret: "slack-signing"}, Console: signin.Config{ClientSecret: "oidc-client-secret"},
		BrokerURL: "https://broker:broker-password@broker.example/"}
	require.ElementsMatch(t, []string{"jwt-secret-0123456789", "jwt-previous-0123456789", k1, "slack-signing", "oidc-client-secret",
		"db-password", "broker-password"}, ownSecrets(cfg, pool))
}
