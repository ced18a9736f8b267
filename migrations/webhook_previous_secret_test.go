package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/migrations"
)

// TestMigration046_WebhookPreviousSecret: 046 adds the secret a rotation
// replaced and until when it still signs, both or neither; its down part
// drops them, keeping the endpoints and their current secrets; up again
// adds them back, empty.
func TestMigration046_WebhookPreviousSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	insert := func(columns, values string) (uuid.UUID, error) {
		id := uuid.New()
		_, err := pool.Exec(ctx, `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed`+columns+`)
			VALUES ($1, 'acme', 'https://hooks.example/x', '{}', '\x01'`+values+`)`, id)
		return id, err
	}
	rotated, err := insert(", previous_secret_sealed, previous_until", `, '\x02', now() + interval '1 day'`)
	require.NoError(t, err)
	var pgErr *pgconn.PgError
	_, err = insert(", previous_secret_sealed", `, '\x02'`)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23514", pgErr.Code, "check_violation: a previous secret has its end")
	_, err = insert(", previous_until", `, now()`)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23514", pgErr.Code, "check_violation: an end has its previous secret")

	var since []int // 46 and every migration after it, newest first
	for _, m := range migrations.All() {
		if m.Version >= 46 {
			since = append([]int{m.Version}, since...)
		}
	}
	reverted, err := migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	require.Equal(t, since, reverted)
	var sealed []byte
	require.NoError(t, pool.QueryRow(ctx, `SELECT secret_sealed FROM webhooks WHERE id = $1`, rotated).Scan(&sealed))
	require.Equal(t, []byte{1}, sealed, "the endpoint keeps its current secret")
	_, err = insert(", previous_secret_sealed", `, '\x02'`)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "42703", pgErr.Code, "undefined_column")

	applied, err := migrations.Up(ctx, pool)
	require.NoError(t, err)
	slices.Reverse(since)
	require.Equal(t, since, applied)
	var previous []byte
	require.NoError(t, pool.QueryRow(ctx, `SELECT previous_secret_sealed FROM webhooks WHERE id = $1`, rotated).Scan(&previous))
	require.Nil(t, previous)
	_, err = insert(", previous_secret_sealed, previous_until", `, '\x02', now()`)
	require.NoError(t, err)
}
