package webhookstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/relay/webhook/webhookstore"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestStore_PreviousValidUntilByPostgresClock: an endpoint says until when
// its previous secret signs only while it does by Postgres's clock, the
// one its deliveries are signed by (Target), not by the reader's: Get,
// List and Target agree; once the overlap has ended, an update of the
// endpoint forgets the secret itself.
func TestStore_PreviousValidUntilByPostgresClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	store := webhookstore.New(pool)
	insert := func(until string) (uuid.UUID, time.Time) {
		t.Helper()
		id := uuid.New()
		var stored time.Time
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed, previous_secret_sealed, previous_until)
			VALUES ($1, 'acme', 'https://hooks.example/x', '{}', '\x01', '\x02', `+until+`) RETURNING previous_until`, id).Scan(&stored))
		return id, stored
	}
	ended, _ := insert(`now() - interval '1 second'`)
	overlapping, until := insert(`now() + interval '1 hour'`)

	get := func(id uuid.UUID) webhookstore.Endpoint {
		t.Helper()
		ep, ok, err := store.Get(ctx, "acme", id)
		require.NoError(t, err)
		require.True(t, ok)
		target, ok, err := store.Target(ctx, id)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, ep.PreviousValidUntil, target.PreviousValidUntil, "the answer and the deliveries agree")
		require.Equal(t, ep.PreviousValidUntil != nil, target.PreviousSealed != nil, "shown while it signs")
		return ep
	}
	require.Nil(t, get(ended).PreviousValidUntil, "the overlap has ended")
	require.NotNil(t, get(overlapping).PreviousValidUntil)
	require.True(t, until.Equal(*get(overlapping).PreviousValidUntil), "Postgres's time, as stored")

	all, err := store.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, all, 2)
	for _, ep := range all {
		if ep.ID == ended {
			require.Nil(t, ep.PreviousValidUntil)
		} else {
			require.NotNil(t, ep.PreviousValidUntil)
		}
	}

	description := "changed"
	for _, id := range []uuid.UUID{ended, overlapping} {
		ep, ok, err := store.Update(ctx, "acme", id, &webhookstore.Fields{Description: &description})
		require.NoError(t, err)
		require.True(t, ok)
		var previous []byte
		require.NoError(t, pool.QueryRow(ctx, `SELECT previous_secret_sealed FROM webhooks WHERE id = $1`, id).Scan(&previous))
		if id == ended {
			require.Nil(t, ep.PreviousValidUntil)
			require.Nil(t, previous, "an update forgets a secret past its overlap")
		} else {
			require.NotNil(t, ep.PreviousValidUntil)
			require.Equal(t, []byte{2}, previous, "it still signs")
		}
	}
}
