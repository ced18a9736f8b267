package grant_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func approved(params string) *invocation.Invocation {
	session := "s-1"
	return &invocation.Invocation{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", SessionID: &session,
		Integration: "slack", Action: "send_message", Params: json.RawMessage(params),
	}
}

func request(params string) *grant.Request {
	return &grant.Request{Org: "org-1", SourceID: "slack", ActionID: "send_message", SessionID: "s-1",
		Params: json.RawMessage(params), DefinitionHash: "h1"}
}

// TestKeeper_RacingUsesLetExactlyN: N+1 transactions racing for a grant of
// N each take a use; exactly N get one.
func TestKeeper_RacingUsesLetExactlyN(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	k := grant.NewKeeper()
	const n = 6
	g, err := k.Create(ctx, pool, approved(`{"channel":"C1","text":"x"}`), nil, &grant.Spec{Count: n, Minutes: 5, Fixed: []string{"channel"}}, "h1", "alice")
	require.NoError(t, err)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got int
	)
	for range n + 1 {
		wg.Go(func() {
			err := dbutil.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
				id, _, err := k.Use(ctx, tx, request(`{"channel":"C1","text":"y"}`))
				if id != nil {
					require.Equal(t, g.ID, *id)
					mu.Lock()
					got++
					mu.Unlock()
				}
				return err
			})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, n, got)
}

// TestKeeper_Constraints: the fixed values, the scope, the action and the
// definition hash must all match; a different hash revokes the grant.
func TestKeeper_Constraints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	k := grant.NewKeeper()
	_, err := k.Create(ctx, pool, approved(`{"channel":"C1","opts":{"a":[1,2]},"text":"x"}`), nil, &grant.Spec{Count: 10, Minutes: 5, Fixed: []string{"channel", "opts"}}, "h1", "alice")
	require.NoError(t, err)
	use := func(r *grant.Request) bool {
		id, _, err := k.Use(ctx, pool, r)
		require.NoError(t, err)
		return id != nil
	}
	require.False(t, use(request(`{"channel":"C2","opts":{"a":[1,2]}}`)), "another channel")
	require.False(t, use(request(`{"channel":"C1","opts":{"a":[1]}}`)), "a nested value must be equal, not contained")
	require.False(t, use(request(`{"channel":"C1"}`)), "a fixed param missing")
	other := request(`{"channel":"C1","opts":{"a":[1,2]}}`)
	other.SessionID = "s-2"
	require.False(t, use(other), "another session")
	other = request(`{"channel":"C1","opts":{"a":[1,2]}}`)
	other.ActionID = "add_reaction"
	require.False(t, use(other), "another action")
	require.True(t, use(request(`{"opts":{"a":[1,2]},"channel":"C1","text":"anything"}`)))

	drifted := request(`{"channel":"C1","opts":{"a":[1,2]}}`)
	drifted.DefinitionHash = "h2"
	require.False(t, use(drifted))
	require.False(t, use(request(`{"channel":"C1","opts":{"a":[1,2]}}`)), "the drift revoked it")
	gs, err := grant.NewService(pool).List(ctx, "org-1", auth.SourceClaim{}, false)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	require.Equal(t, grant.ReasonDrift, gs[0].RevokeReason)
	require.Equal(t, 9, gs[0].Remaining)
}

// TestKeeper_BadSpecs: what cannot be a grant is a validation error.
func TestKeeper_BadSpecs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	k := grant.NewKeeper()
	noScope := approved(`{"channel":"C1"}`)
	noScope.SessionID = nil
	for name, c := range map[string]struct {
		inv  *invocation.Invocation
		spec grant.Spec
	}{
		"no session or automation": {noScope, grant.Spec{Count: 1, Minutes: 1}},
		"a secret":                 {approved(`{"token":"[REDACTED]","channel":"C1"}`), grant.Spec{Count: 1, Minutes: 1, Fixed: []string{"token"}}},
		"a secret inside":          {approved(`{"text":"key [REDACTED] here"}`), grant.Spec{Count: 1, Minutes: 1, Fixed: []string{"text"}}},
		"missing param":            {approved(`{"channel":"C1"}`), grant.Spec{Count: 1, Minutes: 1, Fixed: []string{"nope"}}},
		"too many":                 {approved(`{}`), grant.Spec{Count: grant.MaxCount + 1, Minutes: 1}},
		"too long":                 {approved(`{}`), grant.Spec{Count: 1, Minutes: grant.MaxMinutes + 1}},
	} {
		_, err := k.Create(ctx, pool, c.inv, nil, &c.spec, "h1", "alice")
		var invalid *errs.ValidationError
		require.True(t, errors.As(err, &invalid), "%s: %v", name, err)
	}
	gs, err := grant.NewService(pool).List(ctx, "org-1", auth.SourceClaim{}, false)
	require.NoError(t, err)
	require.Empty(t, gs)

	// An automation's invocation is granted in its automation.
	auto := approved(`{"channel":"C1"}`)
	a := "automation-1"
	auto.AutomationID = &a
	g, err := k.Create(ctx, pool, auto, nil, &grant.Spec{Count: 1, Minutes: 1}, "h1", "alice")
	require.NoError(t, err)
	require.Equal(t, grant.ScopeAutomation, g.Scope)
	require.Equal(t, a, g.ScopeID)
	require.WithinDuration(t, time.Now().Add(time.Minute), g.ExpiresAt, 10*time.Second)
}

// TestCovers pins the one test of a grant's drift: only the definition it
// was made for, and never a reviewed connector tool that drifted since
// its review, even when the hash it was made for is the one it has now.
func TestCovers(t *testing.T) {
	require.True(t, grant.Covers("h1", "h1", false))
	require.False(t, grant.Covers("h1", "h2", false), "redefined")
	require.False(t, grant.Covers("h1", "h1", true), "drifted since its review")
	require.False(t, grant.Covers("h1", "h2", true))
}
