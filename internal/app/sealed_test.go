package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/sealed/sealedstore"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// TestSealedGroups_EveryColumn: the start's check of the stored secrets'
// keys reads every column of sealed values a rotation re-seals, so a
// column added there is not left out of the warning.
func TestSealedGroups_EveryColumn(t *testing.T) {
	t.Parallel()
	for _, c := range sealedstore.Columns {
		require.Contains(t, sealedValuesSQL, "'"+c.Name+"'", "add %s to sealedValuesSQL", c.Name)
	}
}

// TestUnreadableSecrets_EveryValueIsOpened: values that name the same key
// id may be sealed with different keys (secrets.key replaced rather than
// rotated: its id is "default" before and after). The check opened one
// value of each id, so with one of the new key's values among the old
// ones it said nothing, or counted the new one as lost; it counts exactly
// the values no key opens.
func TestUnreadableSecrets_EveryValueIsOpened(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	replaced, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	current, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	other, err := secretbox.NewRing([]secretbox.Key{{ID: "other", Secret: secretbox.NewKey()}})
	require.NoError(t, err)
	for i, box := range []*secretbox.Box{current, replaced, current, replaced, replaced, other, current} {
		integration := fmt.Sprintf("source-%d", i)
		_, err := pool.Exec(ctx, `INSERT INTO credentials (organization_id, integration, user_id, sealed, token_kind, created_by)
VALUES ('o', $1, '', $2, '', 'x')`, integration, box.Seal([]byte("plain"), credentialstore.Additional("o", integration, "")))
		require.NoError(t, err)
	}
	for _, box := range []*secretbox.Box{current, replaced} {
		hook := uuid.New()
		_, err = pool.Exec(ctx, `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed) VALUES ($1, 'o', 'https://hooks.example/x', '{}', $2)`,
			hook, box.Seal([]byte("plain"), hook[:]))
		require.NoError(t, err)
	}

	// Either key leaves the other's values, and the third key's, unread.
	for _, box := range []*secretbox.Box{current, replaced} {
		groups, err := unreadableSecrets(ctx, pool, box)
		require.NoError(t, err)
		counts := map[string]int64{}
		for _, g := range groups {
			require.NotNil(t, g.KeyID)
			counts[g.Column+" "+*g.KeyID] = g.N
		}
		require.Equal(t, map[string]int64{
			"credentials.sealed default": 3, "credentials.sealed other": 1, "webhooks.secret_sealed default": 1,
		}, counts)
	}
}
