package retention_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/retention"
)

// TestRetention_ForgetsEndedWebhookSecrets: a run forgets the previous
// signing secret of every endpoint whose overlap has ended (by Postgres's
// clock), of any organization, whatever the retention (here: keep
// everything); one still in its overlap, and the current secrets, stay.
func TestRetention_ForgetsEndedWebhookSecrets(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	insert := func(org, until string) uuid.UUID {
		t.Helper()
		id := uuid.New()
		previous := `NULL`
		if until != "NULL" {
			previous = `'\x02'`
		}
		_, err := b.pool.Exec(ctx, `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed, previous_secret_sealed, previous_until)
			VALUES ($1, $2, 'https://hooks.example/x', '{}', '\x01', `+previous+`, `+until+`)`, id, org)
		require.NoError(t, err)
		return id
	}
	ended := insert("org-a", `now() - interval '1 second'`)
	endedOther := insert("org-b", `now() - interval '3 days'`)
	overlapping := insert("org-a", `now() + interval '1 hour'`)
	never := insert("org-a", "NULL")

	svc, err := retention.New(&retention.Deps{Pool: b.pool}, &retention.Config{
		Invocations: retention.Forever, WebhookDeliveries: retention.Forever, AuditEntries: retention.Forever,
	})
	require.NoError(t, err)
	rep, err := svc.Run(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, rep.ClearedSecrets)

	previous := func(id uuid.UUID) (sealed []byte, signs bool) {
		t.Helper()
		var current []byte
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT secret_sealed, previous_secret_sealed, previous_until IS NOT NULL FROM webhooks WHERE id = $1`, id).
			Scan(&current, &sealed, &signs))
		require.Equal(t, []byte{1}, current, "the current secret stays")
		return sealed, signs
	}
	for _, id := range []uuid.UUID{ended, endedOther, never} {
		sealed, until := previous(id)
		require.Nil(t, sealed, "a secret past its overlap is not kept")
		require.False(t, until)
	}
	sealed, until := previous(overlapping)
	require.Equal(t, []byte{2}, sealed, "it still signs")
	require.True(t, until)

	rep, err = svc.Run(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.ClearedSecrets)
}
