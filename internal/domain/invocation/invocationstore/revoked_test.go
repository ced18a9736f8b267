package invocationstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/revocation"
)

// createBy records, in tx, an invocation of session-1's send_message asked
// for by token (nil: no token), approved (its job runs now) or pending.
func (b *testBundle) createBy(t *testing.T, tx pgx.Tx, status invocation.Status, token *invocation.Token) invocation.Invocation {
	t.Helper()
	p := &invocation.CreateParams{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", SessionID: "session-1", RequestedBy: "agent",
		Origin: "invoke", Integration: "slack", Action: "send_message", RiskLevel: "write",
		Mode: "allow", ModeSource: "org_default", Params: json.RawMessage(`{"channel":"C1"}`),
		ParamsHash: "h", Status: status, Approval: "auto", Retry: &invocation.Retry{MaxAttempts: 2, BaseDelay: time.Second},
		Token: token,
	}
	if status == invocation.StatusPending {
		expires := time.Now().Add(time.Hour)
		p.ExpiresAt = &expires
	}
	inv, err := b.store.Create(context.Background(), tx, p)
	require.NoError(t, err)
	return inv
}

// committed is createBy in a transaction of its own.
func (b *testBundle) committed(t *testing.T, status invocation.Status, token *invocation.Token) invocation.Invocation {
	t.Helper()
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	inv := b.createBy(t, tx, status, token)
	require.NoError(t, tx.Commit(ctx))
	return inv
}

func (b *testBundle) jobState(t *testing.T, inv invocation.Invocation) string {
	t.Helper()
	require.NotNil(t, inv.JobID)
	var state string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT state FROM river_job WHERE id = $1`, *inv.JobID).Scan(&state))
	return state
}

func revocations(t *testing.T, b *testBundle) *revocation.Service {
	t.Helper()
	svc, err := revocation.New(&revocation.Deps{Pool: b.pool, Owner: b.pool}, &revocation.Config{MaxLifetime: time.Hour})
	require.NoError(t, err)
	svc.SetInvocations(b.store)
	return svc
}

// TestCreateMany_RevokedTokenIsWithdrawn: a request whose token another
// API process has revoked (this one has not refreshed yet), or that was
// past its check when the token was revoked, records its invocation after
// the revocation committed. Before, it stayed approved (its job ran) or
// pending. Now the transaction that records it finds the revocation and
// withdraws it as the revocation would have: cancelled, with its job, the
// cancelled event naming the revocation, by the revoker. A token of
// another session, one issued at the cut-off and an invocation no token
// asked for are recorded as asked; each records its token's jti and iat.
func TestCreateMany_RevokedTokenIsWithdrawn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	r, err := revocations(t, b).Revoke(ctx, "org-1", &revocation.Params{SessionID: "session-1", By: "owner"})
	require.NoError(t, err)
	iat := time.Now().Add(-time.Minute).Truncate(time.Second)
	revoked := &invocation.Token{JTI: "j1", SessionID: "session-1", Subject: "agent", IssuedAt: &iat}

	for _, status := range []invocation.Status{invocation.StatusApproved, invocation.StatusPending} {
		inv := b.committed(t, status, revoked)
		require.Equal(t, invocation.StatusCancelled, inv.Status, "the answer says cancelled")
		got, err := b.store.Get(ctx, b.pool, "org-1", inv.ID)
		require.NoError(t, err)
		require.Equal(t, invocation.StatusCancelled, got.Status)
		events, err := b.store.Events(ctx, b.pool, "org-1", inv.ID)
		require.NoError(t, err)
		require.Len(t, events, 2)
		require.Equal(t, invocation.EventCancelled, events[1].Type)
		require.Equal(t, "owner", events[1].Actor)
		require.Contains(t, events[1].Reason, fmt.Sprintf(`revocation %d, session_id "session-1"`, r.ID))
		require.Equal(t, "cancelled", b.jobState(t, inv), "its job never runs")
	}

	other := &invocation.Token{SessionID: "session-2", Subject: "agent", IssuedAt: &iat}
	later := r.IssuedBefore
	fresh := &invocation.Token{JTI: "j2", SessionID: "session-1", Subject: "agent", IssuedAt: &later}
	for name, tok := range map[string]*invocation.Token{"OtherSession": other, "IssuedAtTheCutOff": fresh, "NoToken": nil} {
		inv := b.committed(t, invocation.StatusApproved, tok)
		require.Equal(t, invocation.StatusApproved, inv.Status, name)
		require.Equal(t, "available", b.jobState(t, inv), name)
	}

	inv := b.committed(t, invocation.StatusApproved, fresh)
	var jti *string
	var issued *time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT token_jti, token_issued_at FROM action_invocations WHERE id = $1`, inv.ID).Scan(&jti, &issued))
	require.Equal(t, "j2", *jti)
	require.True(t, later.Equal(*issued))
	inv = b.committed(t, invocation.StatusApproved, other)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT token_jti, token_issued_at FROM action_invocations WHERE id = $1`, inv.ID).Scan(&jti, &issued))
	require.Nil(t, jti, "a token without jti records none")
	require.True(t, iat.Equal(*issued))
}

// TestCreateMany_RevocationWaitsForRecording: a revocation stored while a
// transaction recording an invocation of its token is under way. Before,
// the revocation looked for the invocations to withdraw without seeing the
// uncommitted one (withdrawn 0), and the recording, which had looked for
// revocations before there was one, committed it approved: its job ran.
// Now the revocation waits for the recording transaction (the lock it
// holds shared) and withdraws the invocation once it committed.
func TestCreateMany_RevocationWaitsForRecording(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	svc := revocations(t, b)
	iat := time.Now().Add(-time.Minute)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	inv := b.createBy(t, tx, invocation.StatusApproved, &invocation.Token{SessionID: "session-1", Subject: "agent", IssuedAt: &iat})
	require.Equal(t, invocation.StatusApproved, inv.Status)

	type result struct {
		r   revocation.Revocation
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := svc.Revoke(ctx, "org-1", &revocation.Params{SessionID: "session-1", By: "owner"})
		done <- result{r, err}
	}()
	// The revocation waits for the organization's revocation lock.
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case res := <-done:
			t.Fatalf("the revocation did not wait for the recording transaction: withdrew %d, err %v", res.r.Withdrawn, res.err)
		default:
		}
		var waiting int
		require.NoError(t, b.pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_locks AS l, (SELECT hashtextextended('token_revocations/org-1', 0) AS k) AS x
			WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objsubid = 1
			  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND l.classid::bigint = (x.k >> 32) & 4294967295 AND l.objid::bigint = x.k & 4294967295`).Scan(&waiting))
		if waiting > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the revocation never waited for the lock")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, tx.Commit(ctx))

	res := <-done
	require.NoError(t, res.err)
	require.Equal(t, 1, res.r.Withdrawn, "the invocation committed while the revocation waited")
	got, err := b.store.Get(ctx, b.pool, "org-1", inv.ID)
	require.NoError(t, err)
	require.Equal(t, invocation.StatusCancelled, got.Status)
	require.Equal(t, "cancelled", b.jobState(t, inv))
}

// TestRecord_AnswersTheRefusal: Record answers, for each invocation a
// revoked token asked for, the refusal that withdrew it (the revocation,
// its revoker and the cancelled event's reason, revocation's
// WithdrawalReason), so that its request is answered as a revoked token
// is; nil for the others. Before, the recording answered the invocation
// cancelled only, which the API could not tell from a cancellation. One
// the policy denied stays denied and is answered refused too.
func TestRecord_AnswersTheRefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	r, err := revocations(t, b).Revoke(ctx, "org-1", &revocation.Params{SessionID: "session-1", By: "owner"})
	require.NoError(t, err)
	iat := time.Now().Add(-time.Minute).Truncate(time.Second)
	revoked := &invocation.Token{SessionID: "session-1", Subject: "agent", IssuedAt: &iat}
	params := func(status invocation.Status, token *invocation.Token) *invocation.CreateParams {
		p := &invocation.CreateParams{
			ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", SessionID: "session-1", RequestedBy: "agent",
			Origin: "invoke", Integration: "slack", Action: "send_message", RiskLevel: "write",
			Mode: "allow", ModeSource: "org_default", Params: json.RawMessage(`{"channel":"C1"}`),
			ParamsHash: "h", Status: status, Approval: "auto", Token: token,
		}
		if status == invocation.StatusDenied {
			p.DeniedReason = "policy"
		}
		return p
	}
	tx := b.begin(t)
	invs, refused, err := b.store.Record(ctx, tx, []*invocation.CreateParams{
		params(invocation.StatusApproved, revoked),
		params(invocation.StatusApproved, &invocation.Token{SessionID: "session-2", Subject: "agent", IssuedAt: &iat}),
		params(invocation.StatusDenied, revoked),
		params(invocation.StatusApproved, nil),
	})
	require.NoError(t, err)
	require.Len(t, refused, 4)
	want := &invocation.Refusal{RevocationID: r.ID, RevokedBy: "owner", Reason: revocation.WithdrawalReason(&r)}
	require.Equal(t, want, refused[0])
	require.Equal(t, invocation.StatusCancelled, invs[0].Status)
	require.Nil(t, refused[1])
	require.Equal(t, invocation.StatusApproved, invs[1].Status)
	require.Equal(t, want, refused[2])
	require.Equal(t, invocation.StatusDenied, invs[2].Status, "a denied invocation stays denied")
	require.Nil(t, refused[3])
	require.Equal(t, invocation.StatusApproved, invs[3].Status)
	events, err := b.store.Events(ctx, tx, "org-1", invs[0].ID)
	require.NoError(t, err)
	require.Equal(t, want.Reason, events[len(events)-1].Reason)
	require.Contains(t, want.Reason, fmt.Sprintf(`revocation %d, session_id "session-1"`, r.ID))
}

// TestCreateMany_RefusesTokensWithoutRefusals: a Store made with New
// cannot look for revocations, and refuses to record what a token asked
// for rather than record it unchecked; what no token asked for it records.
func TestCreateMany_RefusesTokensWithoutRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	require.NoError(t, err)
	bare := &testBundle{pool: b.pool, store: invocationstore.New(client)}
	iat := time.Now()
	tx := b.begin(t)
	_, err = bare.store.Create(ctx, tx, &invocation.CreateParams{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", SessionID: "session-1", RequestedBy: "agent",
		Origin: "invoke", Integration: "slack", Action: "send_message", RiskLevel: "write",
		Mode: "allow", ModeSource: "org_default", Params: json.RawMessage(`{}`), ParamsHash: "h",
		Status: invocation.StatusApproved, Approval: "auto", Token: &invocation.Token{SessionID: "session-1", IssuedAt: &iat},
	})
	require.ErrorContains(t, err, "NewRecording")
	require.NoError(t, tx.Rollback(ctx))
	inv := bare.committed(t, invocation.StatusApproved, nil)
	require.Equal(t, invocation.StatusApproved, inv.Status)
}
