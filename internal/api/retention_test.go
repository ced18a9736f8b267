package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/retention"
)

// TestStats_Retention: the operations summary shows how long finished rows
// are kept and what the worker's retention run deleted of the caller's
// organization, and nothing of another's.
func TestStats_Retention(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	ctx := context.Background()
	for org, n := range map[string]int{apptest.Org: 7, "org-2": 3} {
		_, err := b.Pool.Exec(ctx, `
INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level,
    mode, mode_source, params, params_hash, status, completed_at)
SELECT $1, 'test', 'invoke', 'demo', 'act', 'low', 'allow', 'default', '{}', 'h', 'completed', now() - interval '100 days'
FROM generate_series(1, $2)`, org, n)
		require.NoError(t, err)
	}
	_, err := b.App.River.Insert(ctx, retention.Args{}, nil)
	require.NoError(t, err)

	var invocations map[string]any
	require.Eventually(t, func() bool {
		r := b.Do("GET", "/v1/stats", b.Admin(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		for _, e := range r.Body["retention"].([]any) {
			if e := e.(map[string]any); e["table"] == "action_invocations" && e["last_run_at"] != nil {
				invocations = e
			}
		}
		return invocations != nil
	}, 30*time.Second, 50*time.Millisecond, "no retention run showed on the operations summary")
	require.EqualValues(t, 7, invocations["last_deleted"])
	require.EqualValues(t, 7, invocations["deleted_total"])
	require.InDelta(t, (90 * 24 * time.Hour).Seconds(), invocations["keep_seconds"], 0)

	// Another organization sees its own deletions (recorded by the same
	// run), not org-1's.
	r := b.Do("GET", "/v1/stats", b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner}), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var seen, audit bool
	for _, e := range r.Body["retention"].([]any) {
		if e := e.(map[string]any); e["table"] == "action_invocations" {
			require.EqualValues(t, 3, e["last_deleted"])
			seen = true
		}
		if e := e.(map[string]any); e["table"] == "audit_entries" {
			require.InDelta(t, (400 * 24 * time.Hour).Seconds(), e["keep_seconds"], 0, "the audit trail is kept 400 days")
			audit = true
		}
	}
	require.True(t, seen)
	require.True(t, audit)
}
