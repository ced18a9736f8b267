package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/migrations"
)

// TestMigration045_RevocationSubject: 045 adds token_revocations.subject,
// one selector among jti, session_id and automation_id (a revocation names
// at most one); its down part drops the revocations by subject, which
// would otherwise read as revoking the whole organization, keeps the
// others and drops the column; up again adds it back.
func TestMigration045_RevocationSubject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	insert := func(columns, values string) error {
		_, err := pool.Exec(ctx, `INSERT INTO token_revocations (organization_id, issued_before, revoked_by`+columns+`)
			VALUES ('acme', now(), 'test'`+values+`)`)
		return err
	}
	require.NoError(t, insert(", subject", ", 'alice'"))
	require.NoError(t, insert(", session_id", ", 's1'"))
	err := insert(", subject, jti", ", 'alice', 'j1'")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23514", pgErr.Code, "check_violation: one selector")

	var since []int // 45 and every migration after it, newest first
	for _, m := range migrations.All() {
		if m.Version >= 45 {
			since = append([]int{m.Version}, since...)
		}
	}
	reverted, err := migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	require.Equal(t, since, reverted)
	var sessions, all int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(session_id), count(*) FROM token_revocations`).Scan(&sessions, &all))
	require.Equal(t, 1, sessions, "the revocation by session is kept")
	require.Equal(t, 1, all, "the revocation by subject is dropped, not left revoking the organization")
	err = insert(", subject", ", 'alice'")
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "42703", pgErr.Code, "undefined_column")
	require.ErrorAs(t, insert(", session_id, jti", ", 's1', 'j1'"), &pgErr)
	require.Equal(t, "23514", pgErr.Code, "the check is back")

	applied, err := migrations.Up(ctx, pool)
	require.NoError(t, err)
	slices.Reverse(since)
	require.Equal(t, since, applied)
	require.NoError(t, insert(", subject", ", 'alice'"))
}
