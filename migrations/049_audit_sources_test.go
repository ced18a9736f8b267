package migrations_test

import (
	"context"
	"crypto/md5"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/migrations"
)

// TestMigration049_AuditSources: 049 gives every audit entry the sources
// it concerns, existing ones included where their columns name them, and
// leaves the organization's entries (and those whose source is gone) with
// none; its hash is untouched. Its down part drops the column, keeping the
// entries; up again adds it back.
func TestMigration049_AuditSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	var since []int // 49 and every migration after it, newest first
	for _, m := range migrations.All() {
		if m.Version >= 49 {
			since = append([]int{m.Version}, since...)
		}
	}
	reverted, err := migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	require.Equal(t, since, reverted)

	const (
		grantKept  = "00000000-0000-4000-8000-000000000001"
		grantGone  = "00000000-0000-4000-8000-000000000002"
		deadSlack  = "00000000-0000-4000-8000-000000000003"
		deadGithub = "00000000-0000-4000-8000-000000000004"
		deadGone   = "00000000-0000-4000-8000-000000000005"
		conn       = "00000000-0000-4000-8000-000000000006"
		db         = "00000000-0000-4000-8000-000000000007"
	)
	_, err = pool.Exec(ctx, `INSERT INTO grants (id, organization_id, scope, scope_id, source_id, action_id, granted, remaining,
		expires_at, definition_hash, created_by, created_from)
		VALUES ($1, 'org-1', 'session', 's-1', 'github', 'create_issue', 1, 1, now(), 'h', 'alice', gen_random_uuid())`, grantKept)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO action_invocations (id, organization_id, requested_by, origin, integration, action,
		risk_level, mode, mode_source, params, params_hash, status)
		SELECT id::uuid, 'org-1', 'agent', 'invoke', integration, 'act', 'R1', 'allow', 'default', '{}', 'h', 'failed'
		FROM (VALUES ($1, 'slack'), ($2, 'github')) AS v(id, integration)`, deadSlack, deadGithub)
	require.NoError(t, err)
	entries := []struct{ target, id, before, after, want string }{
		{"invocation", "i-1", `null`, `{"source_id":"slack","status":"approved"}`, "{slack}"},
		{"credential", "github", `null`, `{}`, "{github}"},
		{"credential", "slack/U123", `{}`, `null`, "{slack}"},
		{"connector", conn, `null`, `{}`, "{connector:" + conn + "}"},
		{"connector", "connector:" + conn, `{}`, `null`, "{connector:" + conn + "}"},
		{"database", db, `{}`, `{}`, "{database:" + db + "}"},
		{"grant", "g-0", `null`, `{"integration":"slack"}`, "{slack}"},
		{"grant", "g-00", `{"integration":"github"}`, `{"revoke_reason":"manual"}`, "{github}"},
		{"grant", grantKept, `null`, `{"revoke_reason":"credential"}`, "{github}"},
		{"grant", grantGone, `null`, `{"revoke_reason":"drift"}`, "{}"},
		{"action_modes", "automation/a-1", `{}`, `{"slack:send_message":"allow"}`, "{slack}"},
		{"action_modes", "org", `{"github:create_issue":"deny","connector:` + conn + `:search":"allow"}`, `null`,
			"{connector:" + conn + ",github}"},
		{"dead_letters", "", `null`, `{"ids":["` + deadSlack + `","` + deadGithub + `","` + deadGone + `","not-a-uuid"],"results":[]}`, "{github,slack}"},
		{"dead_letters", deadGone, `null`, `{"ids":["` + deadGone + `"],"results":[]}`, "{}"},
		{"webhook", "w-1", `null`, `{"url":"https://example.com"}`, "{}"},
		{"do_not_contact", "", `[]`, `["#general"]`, "{}"},
		{"revocation", "1", `null`, `{"subject":"bob"}`, "{}"},
	}
	for i, e := range entries {
		_, err := pool.Exec(ctx, `INSERT INTO audit_entries (organization_id, seq, occurred_at, actor_subject, actor_kind, action,
			target_type, target_id, before_state, after_state, prev_hash, hash)
			VALUES ('org-1', $1, now(), 'alice', 'user', $2 || '.x', $2, $3, $4, $5, md5($6 || 'p'), md5($6))`,
			i+1, e.target, e.id, e.before, e.after, strconv.Itoa(i+1))
		require.NoError(t, err)
	}

	applied, err := migrations.Up(ctx, pool)
	require.NoError(t, err)
	slices.Reverse(since)
	require.Equal(t, since, applied)
	for i, e := range entries {
		var got, hash string
		require.NoError(t, pool.QueryRow(ctx, `SELECT sources::text, hash FROM audit_entries WHERE organization_id = 'org-1' AND seq = $1`, i+1).
			Scan(&got, &hash))
		require.Equal(t, e.want, got, "%s %s", e.target, e.id)
		require.Equal(t, fmt.Sprintf("%x", md5.Sum([]byte(strconv.Itoa(i+1)))), hash)
	}

	slices.Reverse(since)
	_, err = migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_entries WHERE organization_id = 'org-1'`).Scan(&n))
	require.Equal(t, len(entries), n, "the entries stay")
	var pgErr *pgconn.PgError
	_, err = pool.Exec(ctx, `SELECT sources FROM audit_entries`)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "42703", pgErr.Code, "undefined_column")
	_, err = migrations.Up(ctx, pool)
	require.NoError(t, err)
}
