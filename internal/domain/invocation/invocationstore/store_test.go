package invocationstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

type testBundle struct {
	pool  *pgxpool.Pool
	store *invocationstore.Store
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtest.Pool(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	return &testBundle{pool: pool, store: invocationstore.NewRecording(client, revocation.Refusals{})}
}

// begin opens a transaction rolled back at the end of the test.
func (b *testBundle) begin(t *testing.T) pgx.Tx {
	t.Helper()
	tx, err := b.pool.Begin(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func (b *testBundle) create(t *testing.T, db pgx.Tx, status invocation.Status) invocation.Invocation {
	t.Helper()
	p := &invocation.CreateParams{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", SessionID: "session-1", RequestedBy: "agent",
		Origin: "invoke", Integration: "slack", Action: "send_message", RiskLevel: "write",
		Mode: "require_approval", ModeSource: "inferred_default", Params: json.RawMessage(`{"channel":"C1"}`),
		ParamsHash: "h", Status: status, Approval: "auto", Retry: &invocation.Retry{MaxAttempts: 2, BaseDelay: time.Second},
	}
	if status == invocation.StatusPending {
		expires := time.Now().Add(time.Hour)
		p.ExpiresAt = &expires
	}
	if status == invocation.StatusDenied {
		p.DeniedReason = "policy"
	}
	inv, err := b.store.Create(context.Background(), db, p)
	require.NoError(t, err)
	return inv
}

type step struct {
	typ      invocation.EventType
	from, to invocation.Status
}

func requireTimeline(t *testing.T, b *testBundle, db invocationstore.DB, id uuid.UUID, want ...step) {
	t.Helper()
	events, err := b.store.Events(context.Background(), db, "org-1", id)
	require.NoError(t, err)
	got := make([]step, len(events))
	for i, e := range events {
		got[i] = step{e.Type, e.From, e.To}
		require.Equal(t, int32(i+1), e.Seq)
		if i > 0 {
			require.Greater(t, e.ID, events[i-1].ID)
		}
	}
	require.Equal(t, want, got)
}

func jobState(t *testing.T, db invocationstore.DB, id int64) string {
	t.Helper()
	var state string
	require.NoError(t, db.QueryRow(context.Background(), `SELECT state::text FROM river_job WHERE id = $1`, id).Scan(&state))
	return state
}

// An approval places the released job by the fairness decided then, not
// the one its invocation was given when asked for.
func TestStore_ApproveReleasesAtThePlaceDecidedThen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	priority := func(tx pgx.Tx, job int64) (p int) {
		require.NoError(t, tx.QueryRow(ctx, `SELECT priority FROM river_job WHERE id = $1`, job).Scan(&p))
		return p
	}
	tx := b.begin(t)
	asked := b.create(t, tx, invocation.StatusPending)
	_, err := tx.Exec(ctx, `UPDATE river_job SET priority = 2 WHERE id = $1`, *asked.JobID)
	require.NoError(t, err)
	_, err = b.store.Approve(ctx, tx, asked.ID, "alice", false)
	require.NoError(t, err)
	require.Equal(t, 1, priority(tx, *asked.JobID), "asked for behind, approved within the rate")

	approved := b.create(t, tx, invocation.StatusPending)
	require.Equal(t, 1, priority(tx, *approved.JobID))
	_, err = b.store.Approve(ctx, tx, approved.ID, "alice", true)
	require.NoError(t, err)
	require.Equal(t, 2, priority(tx, *approved.JobID), "asked for within the rate, approved past it")
	require.Equal(t, "available", jobState(t, tx, *approved.JobID))
}

func TestStore_Timeline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	t.Run("Approved", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusPending)
		require.Equal(t, "pending", jobState(t, tx, *inv.JobID))
		approved, err := b.store.Approve(ctx, tx, inv.ID, "alice", false)
		require.NoError(t, err)
		require.Equal(t, invocation.StatusApproved, approved.Status)
		require.Equal(t, "available", jobState(t, tx, *inv.JobID), "approval releases the parked job")
		_, err = b.store.Start(ctx, tx, inv.ID, 1)
		require.NoError(t, err)
		require.NoError(t, b.store.Complete(ctx, tx, inv.ID, &invocation.Outcome{Result: json.RawMessage(`{"ok":true}`), ProviderRef: "ts"}))
		done, err := b.store.GetByID(ctx, tx, inv.ID)
		require.NoError(t, err)
		require.Equal(t, invocation.StatusCompleted, done.Status)
		require.Equal(t, "ts", *done.ProviderRef)
		requireTimeline(t, b, tx, inv.ID,
			step{invocation.EventCreated, "", invocation.StatusPending},
			step{invocation.EventApproved, invocation.StatusPending, invocation.StatusApproved},
			step{invocation.EventStarted, invocation.StatusApproved, invocation.StatusExecuting},
			step{invocation.EventCompleted, invocation.StatusExecuting, invocation.StatusCompleted})
		events, err := b.store.Events(ctx, tx, "org-1", inv.ID)
		require.NoError(t, err)
		require.Equal(t, "alice", events[1].Actor)
		require.Equal(t, "agent", events[0].Actor)
	})
	t.Run("Denied", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusPending)
		denied, err := b.store.Deny(ctx, tx, inv.ID, "bob", "human", "not today")
		require.NoError(t, err)
		require.Equal(t, invocation.StatusDenied, denied.Status)
		require.Equal(t, "cancelled", jobState(t, tx, *inv.JobID))
		requireTimeline(t, b, tx, inv.ID,
			step{invocation.EventCreated, "", invocation.StatusPending},
			step{invocation.EventDenied, invocation.StatusPending, invocation.StatusDenied})
		events, _ := b.store.Events(ctx, tx, "org-1", inv.ID)
		require.Equal(t, "not today", events[1].Reason)
	})
	t.Run("Expired", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusPending)
		_, err := b.store.Expire(ctx, tx, inv)
		require.NoError(t, err)
		require.Equal(t, "cancelled", jobState(t, tx, *inv.JobID))
		_, err = b.store.Approve(ctx, tx, inv.ID, "late", false)
		require.ErrorIs(t, err, errs.Conflict)
		requireTimeline(t, b, tx, inv.ID,
			step{invocation.EventCreated, "", invocation.StatusPending},
			step{invocation.EventExpired, invocation.StatusPending, invocation.StatusExpired})
	})
	// An expiry read before the invocation was asked again (a new approval
	// window) does not close the new window.
	t.Run("ExpiredOnlyInTheWindowItWasReadIn", func(t *testing.T) {
		tx := b.begin(t)
		read := b.create(t, tx, invocation.StatusPending)
		require.NotNil(t, read.ExpiresAt)
		parked := jobState(t, tx, *read.JobID)
		_, err := tx.Exec(ctx, `UPDATE action_invocations SET expires_at = expires_at + interval '1 hour' WHERE id = $1`, read.ID)
		require.NoError(t, err)

		_, err = b.store.Expire(ctx, tx, read)
		require.ErrorIs(t, err, errs.Conflict)
		now, err := b.store.GetByID(ctx, tx, read.ID)
		require.NoError(t, err)
		require.Equal(t, invocation.StatusPending, now.Status)
		require.Equal(t, parked, jobState(t, tx, *read.JobID), "the parked job stays")

		expired, err := b.store.Expire(ctx, tx, now)
		require.NoError(t, err)
		require.Equal(t, invocation.StatusExpired, expired.Status)
	})
	t.Run("RetriedThenFailedThenReplayed", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusApproved)
		_, err := b.store.Start(ctx, tx, inv.ID, 1)
		require.NoError(t, err)
		_, err = b.store.ScheduleRetry(ctx, tx, inv.ID, "503 from provider", nil, false)
		require.NoError(t, err)
		_, err = b.store.Start(ctx, tx, inv.ID, 2)
		require.NoError(t, err)
		_, err = b.store.Snooze(ctx, tx, inv.ID, "429, retry after 1s", nil, false)
		require.NoError(t, err)
		_, err = b.store.Start(ctx, tx, inv.ID, 2)
		require.NoError(t, err)
		failed, err := b.store.Fail(ctx, tx, inv.ID, "503 again", nil)
		require.NoError(t, err)
		require.NotNil(t, failed.DeadLetteredAt)
		replayed, err := b.store.Replay(ctx, tx, failed, "ops")
		require.NoError(t, err)
		require.NotEqual(t, *inv.JobID, *replayed.JobID)
		var maxAttempts int
		var args string
		require.NoError(t, tx.QueryRow(ctx, `SELECT max_attempts, args::text FROM river_job WHERE id = $1`, *replayed.JobID).Scan(&maxAttempts, &args))
		require.Equal(t, 2, maxAttempts, "a replay keeps the invocation's retry policy")
		require.Contains(t, args, `"base_delay": 1000000000`)
		_, err = b.store.Start(ctx, tx, inv.ID, 1)
		require.NoError(t, err)
		_, err = b.store.Fail(ctx, tx, inv.ID, "still down", nil)
		require.NoError(t, err)
		_, err = b.store.Discard(ctx, tx, inv.ID, "ops")
		require.NoError(t, err)
		requireTimeline(t, b, tx, inv.ID,
			step{invocation.EventCreated, "", invocation.StatusApproved},
			step{invocation.EventStarted, invocation.StatusApproved, invocation.StatusExecuting},
			step{invocation.EventRetryScheduled, invocation.StatusExecuting, invocation.StatusApproved},
			step{invocation.EventStarted, invocation.StatusApproved, invocation.StatusExecuting},
			step{invocation.EventSnoozed, invocation.StatusExecuting, invocation.StatusApproved},
			step{invocation.EventStarted, invocation.StatusApproved, invocation.StatusExecuting},
			step{invocation.EventFailed, invocation.StatusExecuting, invocation.StatusFailed},
			step{invocation.EventReplayed, invocation.StatusFailed, invocation.StatusApproved},
			step{invocation.EventStarted, invocation.StatusApproved, invocation.StatusExecuting},
			step{invocation.EventFailed, invocation.StatusExecuting, invocation.StatusFailed},
			step{invocation.EventDiscarded, invocation.StatusFailed, invocation.StatusFailed})
	})
	t.Run("DeniedByPolicyHasNoJob", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusDenied)
		require.Nil(t, inv.JobID)
		require.NotNil(t, inv.CompletedAt)
		requireTimeline(t, b, tx, inv.ID, step{invocation.EventCreated, "", invocation.StatusDenied})
	})
	t.Run("OtherOrgSeesNothing", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusPending)
		_, err := b.store.Get(ctx, tx, "org-2", inv.ID)
		require.ErrorIs(t, err, errs.NotFound)
		events, err := b.store.Events(ctx, tx, "org-2", inv.ID)
		require.NoError(t, err)
		require.Empty(t, events)
	})
}

func TestStore_DuplicateKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tx := b.begin(t)
	p := &invocation.CreateParams{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", RequestedBy: "svc", Origin: "envelope",
		Integration: "slack", Action: "send_message", RiskLevel: "write", Mode: "allow", ModeSource: "org_default",
		Params: json.RawMessage(`{}`), ParamsHash: "h", Status: invocation.StatusApproved, Approval: "auto", ExternalID: "ext-1",
	}
	_, err := b.store.Create(context.Background(), tx, p)
	require.NoError(t, err)
	p.ID = uuid.Must(uuid.NewV7())
	_, err = b.store.Create(context.Background(), tx, p)
	require.ErrorIs(t, err, invocationstore.ErrDuplicate)
}

func TestStore_CreateManySkipsTakenKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tx := b.begin(t)
	params := func(ext string, status invocation.Status) *invocation.CreateParams {
		p := &invocation.CreateParams{
			ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", RequestedBy: "svc", Origin: "envelope",
			Integration: "slack", Action: "send_message", RiskLevel: "write", Mode: "allow", ModeSource: "org_default",
			Params: json.RawMessage(`{}`), ParamsHash: "h", Status: status, Approval: "auto", ExternalID: ext,
		}
		if status == invocation.StatusPending {
			expires := time.Now().Add(time.Hour)
			p.ExpiresAt = &expires
		}
		return p
	}
	_, err := b.store.Create(ctx, tx, params("taken", invocation.StatusApproved))
	require.NoError(t, err)

	out, err := b.store.CreateMany(ctx, tx, []*invocation.CreateParams{
		params("a", invocation.StatusApproved), params("taken", invocation.StatusPending), params("b", invocation.StatusPending), params("c", invocation.StatusDenied),
	})
	require.NoError(t, err)
	require.NotNil(t, out[0])
	require.Nil(t, out[1], "the taken external id is not created twice")
	require.NotNil(t, out[2])
	require.NotNil(t, out[3])
	require.Nil(t, out[3].JobID)
	var jobs, expiries int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'execute_action'), count(*) FILTER (WHERE kind = 'expire_invocation') FROM river_job`).Scan(&jobs, &expiries))
	require.Equal(t, 3, jobs, "the duplicate's jobs are deleted")
	require.Equal(t, 1, expiries)
	require.Equal(t, "pending", jobState(t, tx, *out[2].JobID))
	require.Equal(t, "available", jobState(t, tx, *out[0].JobID))
}

// TestStore_CreateManyStoresEveryField: what CreateMany writes reads back
// as given, the unset fields NULL, and of two new invocations with one key
// in one call only the first is recorded.
func TestStore_CreateManyStoresEveryField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tx := b.begin(t)
	expires := time.Now().Add(time.Hour).Round(time.Microsecond)
	before := expires.Add(time.Minute)
	full := &invocation.CreateParams{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", SessionID: "s-1", AutomationID: "auto-1", UserID: "u-1",
		RequestedBy: "agent", Origin: "invoke", Integration: "slack", Action: "send_message", RiskLevel: "write",
		Mode: "require_approval", ModeSource: "org_override", Params: json.RawMessage(`{"channel":"C1","token":"[REDACTED]"}`),
		ParamsSealed: []byte{0, 1, 0xfe, 0xff, '\\', 'x'}, ParamsHash: "hash", Status: invocation.StatusPending,
		ExpiresAt: &expires, ExternalID: "ext-1", IdempotencyKey: "key-1", RateBucket: "slack.minute",
		MustRunBefore: &before, Approval: "required", RiskHint: "sends to a customer",
		Retry: &invocation.Retry{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute},
	}
	bare := &invocation.CreateParams{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", RequestedBy: "svc", Origin: "envelope",
		Integration: "slack", Action: "send_message", RiskLevel: "write", Mode: "deny", ModeSource: "org_default",
		Params: json.RawMessage(`{}`), ParamsHash: "h", Status: invocation.StatusDenied, DeniedReason: "policy", Approval: "auto",
	}
	again := *full
	again.ID = uuid.Must(uuid.NewV7())
	out, err := b.store.CreateMany(ctx, tx, []*invocation.CreateParams{full, bare, &again})
	require.NoError(t, err)
	require.Nil(t, out[2], "the second with the same key is not recorded")

	got, err := b.store.GetByID(ctx, tx, full.ID)
	require.NoError(t, err)
	require.Equal(t, *out[0], got)
	require.Equal(t, []any{"s-1", "auto-1", "u-1", "ext-1", "key-1", "slack.minute", "sends to a customer"},
		[]any{*got.SessionID, *got.AutomationID, *got.UserID, *got.ExternalID, *got.IdempotencyKey, *got.RateBucket, *got.RiskHint})
	require.Equal(t, []string{"agent", "invoke", "slack", "send_message", "write", "require_approval", "org_override", "hash", "required"},
		[]string{got.RequestedBy, got.Origin, got.Integration, got.Action, got.RiskLevel, got.Mode, got.ModeSource, got.ParamsHash, got.Approval})
	require.JSONEq(t, string(full.Params), string(got.Params))
	require.Equal(t, full.ParamsSealed, got.ParamsSealed)
	require.Equal(t, invocation.StatusPending, got.Status)
	require.True(t, expires.Equal(*got.ExpiresAt))
	require.True(t, before.Equal(*got.MustRunBefore))
	require.Equal(t, full.Retry, got.Retry)
	require.NotNil(t, got.JobID)
	require.Nil(t, got.CompletedAt)
	require.Nil(t, got.DeniedReason)

	denied, err := b.store.GetByID(ctx, tx, bare.ID)
	require.NoError(t, err)
	require.Equal(t, "policy", *denied.DeniedReason)
	require.NotNil(t, denied.CompletedAt, "a denied invocation is finished when created")
	require.Nil(t, denied.JobID)
	require.Nil(t, denied.SessionID)
	require.Nil(t, denied.ExternalID)
	require.Nil(t, denied.IdempotencyKey)
	require.Nil(t, denied.ParamsSealed)
	require.Nil(t, denied.Retry)
	require.Nil(t, denied.ExpiresAt)
	requireTimeline(t, b, tx, full.ID, step{invocation.EventCreated, "", invocation.StatusPending})
	requireTimeline(t, b, tx, bare.ID, step{invocation.EventCreated, "", invocation.StatusDenied})
}

// TestStore_RacingTransitions runs two transitions of one invocation in
// concurrent transactions: exactly one wins, and exactly one event is
// written for it.
func TestStore_RacingTransitions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	race := func(t *testing.T, start invocation.Status, first, second func(tx pgx.Tx, inv invocation.Invocation) (invocation.Invocation, error)) (winners []invocation.Status, events int) {
		t.Helper()
		var inv invocation.Invocation
		require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error { inv = b.create(t, tx, start); return nil }))
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			barrier = make(chan struct{})
		)
		for _, fn := range []func(pgx.Tx, invocation.Invocation) (invocation.Invocation, error){first, second} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-barrier
				err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
					got, err := fn(tx, inv)
					if err == nil {
						mu.Lock()
						winners = append(winners, got.Status)
						mu.Unlock()
					}
					return err
				})
				if err != nil && !errors.Is(err, errs.Conflict) {
					t.Error(err)
				}
			}()
		}
		close(barrier)
		wg.Wait()
		all, err := b.store.Events(ctx, b.pool, "org-1", inv.ID)
		require.NoError(t, err)
		return winners, len(all) - 1
	}

	approve := func(tx pgx.Tx, inv invocation.Invocation) (invocation.Invocation, error) {
		return b.store.Approve(ctx, tx, inv.ID, "alice", false)
	}
	expire := func(tx pgx.Tx, inv invocation.Invocation) (invocation.Invocation, error) {
		return b.store.Expire(ctx, tx, inv)
	}
	cancel := func(tx pgx.Tx, inv invocation.Invocation) (invocation.Invocation, error) {
		return b.store.Cancel(ctx, tx, inv.ID, "svc")
	}
	start := func(tx pgx.Tx, inv invocation.Invocation) (invocation.Invocation, error) {
		return b.store.Start(ctx, tx, inv.ID, 1)
	}

	for range 10 {
		winners, events := race(t, invocation.StatusPending, approve, expire)
		require.Len(t, winners, 1, "approve vs expire")
		require.Equal(t, 1, events)

		winners, events = race(t, invocation.StatusApproved, cancel, start)
		require.Len(t, winners, 1, "cancel vs start")
		require.Equal(t, 1, events)
	}
}

// TestStore_EventsAreAnnounced checks each committed event of an
// organization someone listens to is announced on EventsChannel, and a
// rolled-back one is not.
func TestStore_EventsAreAnnounced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `INSERT INTO event_listeners (organization_id, listener_id, expires_at)
		VALUES ('org-1', gen_random_uuid(), now() + interval '1 hour')`)
	require.NoError(t, err)
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "LISTEN "+invocation.EventsChannel)
	require.NoError(t, err)

	rolledBack, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	b.create(t, rolledBack, invocation.StatusPending)
	require.NoError(t, rolledBack.Rollback(ctx))

	var inv invocation.Invocation
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		inv = b.create(t, tx, invocation.StatusPending)
		_, err := b.store.Approve(ctx, tx, inv.ID, "alice", false)
		return err
	}))

	var types []string
	for range 2 {
		waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := conn.Conn().WaitForNotification(waitCtx)
		cancel()
		require.NoError(t, err)
		var ev struct {
			InvocationID uuid.UUID `json:"invocation_id"`
			Type         string    `json:"type"`
		}
		require.NoError(t, json.Unmarshal([]byte(n.Payload), &ev))
		require.Equal(t, inv.ID, ev.InvocationID, "only the committed invocation is announced")
		types = append(types, ev.Type)
	}
	require.Equal(t, []string{"created", "approved"}, types)
}

// TestStore_Begin: the worker's first statement starts an approved
// invocation when no gate can apply, and otherwise only reads, leaving the
// gates to the worker.
func TestStore_Begin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	t.Run("StartsWhenNoGateApplies", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusApproved)
		got, rc, started, err := b.store.Begin(ctx, tx, inv.ID, 1)
		require.NoError(t, err)
		require.True(t, started)
		require.Equal(t, invocation.StatusExecuting, got.Status)
		require.Equal(t, int32(1), got.Attempt)
		require.NotNil(t, got.StartedAt)
		require.False(t, rc.StartedBefore, "the first start")
		require.Empty(t, rc.DoNotContact)
		requireTimeline(t, b, tx, inv.ID,
			step{invocation.EventCreated, "", invocation.StatusApproved},
			step{invocation.EventStarted, invocation.StatusApproved, invocation.StatusExecuting})
		stored, err := b.store.GetByID(ctx, tx, inv.ID)
		require.NoError(t, err)
		require.Equal(t, got.Status, stored.Status)
		require.Equal(t, got.StartedAt.UTC(), stored.StartedAt.UTC())
		require.Equal(t, got.UpdatedAt.UTC(), stored.UpdatedAt.UTC())
	})

	t.Run("StartedBeforeOnALaterAttempt", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusApproved)
		_, rc, started, err := b.store.Begin(ctx, tx, inv.ID, 1)
		require.NoError(t, err)
		require.True(t, started)
		require.False(t, rc.StartedBefore)
		_, err = b.store.ScheduleRetry(ctx, tx, inv.ID, "http_502", nil, false)
		require.NoError(t, err)
		got, rc, started, err := b.store.Begin(ctx, tx, inv.ID, 2)
		require.NoError(t, err)
		require.True(t, started)
		require.True(t, rc.StartedBefore, "the provider may have acted on attempt 1")
		require.Equal(t, int32(2), got.Attempt)
	})

	gated := map[string]string{
		"DoNotContact": `INSERT INTO do_not_contact (organization_id, pattern, created_by) VALUES ('org-1', '*@example.com', 'alice')`,
		"QuietHours":   `INSERT INTO quiet_hours (organization_id, time_zone, start_minute, end_minute, updated_by) VALUES ('org-1', 'UTC', 0, 1, 'alice')`,
	}
	for name, gate := range gated {
		t.Run(name+"LeavesTheGateToTheWorker", func(t *testing.T) {
			tx := b.begin(t)
			_, err := tx.Exec(ctx, gate)
			require.NoError(t, err)
			inv := b.create(t, tx, invocation.StatusApproved)
			got, rc, started, err := b.store.Begin(ctx, tx, inv.ID, 1)
			require.NoError(t, err)
			require.False(t, started)
			require.Equal(t, invocation.StatusApproved, got.Status)
			require.True(t, len(rc.DoNotContact) > 0 || string(rc.QuietHours) != "[]")
			requireTimeline(t, b, tx, inv.ID, step{invocation.EventCreated, "", invocation.StatusApproved})
		})
	}

	t.Run("MustRunBeforePassed", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusApproved)
		_, err := tx.Exec(ctx, `UPDATE action_invocations SET must_run_before = now() - interval '1 second' WHERE id = $1`, inv.ID)
		require.NoError(t, err)
		_, _, started, err := b.store.Begin(ctx, tx, inv.ID, 1)
		require.NoError(t, err)
		require.False(t, started)
	})

	t.Run("NotApproved", func(t *testing.T) {
		tx := b.begin(t)
		inv := b.create(t, tx, invocation.StatusPending)
		got, _, started, err := b.store.Begin(ctx, tx, inv.ID, 1)
		require.NoError(t, err)
		require.False(t, started)
		require.Equal(t, invocation.StatusPending, got.Status)
	})

	t.Run("Missing", func(t *testing.T) {
		_, _, _, err := b.store.Begin(ctx, b.pool, uuid.Must(uuid.NewV7()), 1)
		require.ErrorIs(t, err, errs.NotFound)
	})

	// A cancel committed while Begin waited for the row: the status under
	// the lock is what counts, not the statement's snapshot.
	t.Run("CancelledWhileWaiting", func(t *testing.T) {
		setupTx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		inv := b.create(t, setupTx, invocation.StatusApproved)
		require.NoError(t, setupTx.Commit(ctx))
		canceller, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		defer canceller.Rollback(ctx) //nolint:errcheck
		_, err = b.store.Cancel(ctx, canceller, inv.ID, "alice")
		require.NoError(t, err)
		type answer struct {
			inv     invocation.Invocation
			started bool
			err     error
		}
		done := make(chan answer, 1)
		go func() {
			got, _, started, err := b.store.Begin(ctx, b.pool, inv.ID, 1)
			done <- answer{got, started, err}
		}()
		require.Eventually(t, func() bool {
			var waiting bool
			_ = b.pool.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%InvocationBeginMany%'`).Scan(&waiting)
			return waiting
		}, 5*time.Second, 5*time.Millisecond)
		require.NoError(t, canceller.Commit(ctx))
		a := <-done
		require.NoError(t, a.err)
		require.False(t, a.started)
		require.Equal(t, invocation.StatusCancelled, a.inv.Status)
	})
}

// TestStore_ManyInOneTransaction: BeginMany and CompleteMany answer for
// each invocation, a missing or conflicting one alone, and commit the
// others' transitions together.
func TestStore_ManyInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	setupTx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	first := b.create(t, setupTx, invocation.StatusApproved)
	second := b.create(t, setupTx, invocation.StatusApproved)
	pending := b.create(t, setupTx, invocation.StatusPending)
	require.NoError(t, setupTx.Commit(ctx))
	missing := uuid.Must(uuid.NewV7())

	eventXIDs := func(typ string) []int64 {
		t.Helper()
		rows, err := b.pool.Query(ctx, `SELECT DISTINCT xid::text::bigint FROM invocation_events WHERE type = $1 AND invocation_id = ANY($2)`,
			typ, []uuid.UUID{first.ID, second.ID})
		require.NoError(t, err)
		xids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return xids
	}

	begun, err := b.store.BeginMany(ctx, b.pool, []invocation.BeginArgs{
		{ID: first.ID, Attempt: 1}, {ID: second.ID, Attempt: 3}, {ID: pending.ID, Attempt: 1}, {ID: missing, Attempt: 1},
	})
	require.NoError(t, err)
	require.Len(t, begun, 4)
	for i, attempt := range []int32{1, 3} {
		require.NoError(t, begun[i].Err)
		require.True(t, begun[i].Value.Started)
		require.Equal(t, invocation.StatusExecuting, begun[i].Value.Invocation.Status)
		require.Equal(t, attempt, begun[i].Value.Invocation.Attempt)
		stored, err := b.store.GetByID(ctx, b.pool, begun[i].Value.Invocation.ID)
		require.NoError(t, err)
		require.Equal(t, attempt, stored.Attempt, "each its own attempt")
	}
	require.NoError(t, begun[2].Err)
	require.False(t, begun[2].Value.Started)
	require.Equal(t, invocation.StatusPending, begun[2].Value.Invocation.Status)
	require.ErrorIs(t, begun[3].Err, errs.NotFound)
	require.Len(t, eventXIDs("started"), 1, "both starts in one transaction")

	duration := int32(42)
	done, err := b.store.CompleteMany(ctx, b.pool, []invocation.Completion{
		{ID: first.ID, Outcome: &invocation.Outcome{Result: json.RawMessage(`{"ok":1}`)}},
		{ID: pending.ID, Outcome: &invocation.Outcome{Result: json.RawMessage(`{}`)}},
		{ID: second.ID, Outcome: &invocation.Outcome{
			Result: json.RawMessage(`{"ok":2}`), ProviderRef: "ref-2", Conflict: true, DurationMs: &duration,
			Steps: &executors.Steps{Verification: executors.Verification{OK: true}},
		}},
	})
	require.NoError(t, err)
	require.NoError(t, done[0].Err)
	require.ErrorIs(t, done[1].Err, errs.Conflict, "a pending invocation cannot complete")
	require.NoError(t, done[2].Err)
	stored := func(id uuid.UUID) invocation.Invocation {
		inv, err := b.store.GetByID(ctx, b.pool, id)
		require.NoError(t, err)
		return inv
	}
	one, two := stored(first.ID), stored(second.ID)
	require.Equal(t, invocation.StatusCompleted, one.Status)
	require.JSONEq(t, `{"ok":1}`, string(one.Result))
	require.Nil(t, one.ProviderRef, "no provider ref is NULL")
	require.Nil(t, one.DurationMs, "no duration is NULL")
	require.Nil(t, one.Steps, "no steps is NULL")
	require.False(t, one.Conflict)
	require.NotNil(t, one.CompletedAt)
	require.Equal(t, invocation.StatusCompleted, two.Status)
	require.JSONEq(t, `{"ok":2}`, string(two.Result))
	require.Equal(t, "ref-2", *two.ProviderRef)
	require.True(t, two.Conflict)
	require.Equal(t, int32(42), *two.DurationMs)
	require.True(t, two.Steps.Verification.OK)
	require.Len(t, eventXIDs("completed"), 1, "both completions in one transaction")
	still, err := b.store.GetByID(ctx, b.pool, pending.ID)
	require.NoError(t, err)
	require.Equal(t, invocation.StatusPending, still.Status)

	// Two jobs of one invocation beginning together: a statement changes a
	// row once, so the second begins after the first, with its own event.
	setupTx, err = b.pool.Begin(ctx)
	require.NoError(t, err)
	twice := b.create(t, setupTx, invocation.StatusApproved)
	require.NoError(t, setupTx.Commit(ctx))
	begun, err = b.store.BeginMany(ctx, b.pool, []invocation.BeginArgs{{ID: twice.ID, Attempt: 1}, {ID: twice.ID, Attempt: 2}})
	require.NoError(t, err)
	require.True(t, begun[0].Value.Started)
	require.False(t, begun[0].Value.Run.StartedBefore)
	require.True(t, begun[1].Value.Started)
	require.True(t, begun[1].Value.Run.StartedBefore, "the second finds the first's start")
	require.Equal(t, int32(2), begun[1].Value.Invocation.Attempt)
	events, err := b.store.Events(ctx, b.pool, twice.OrganizationID, twice.ID)
	require.NoError(t, err)
	var started int
	for _, e := range events {
		if e.Type == "started" {
			started++
		}
	}
	require.Equal(t, 2, started)
}

// TestStore_GroupsOnAnIndexPool: on a dbutil.IndexPool, BeginMany and
// CompleteMany are planned once per connection, and the plan made while
// the table was empty reads by key, not the whole table, once the table
// has grown; nor does it join two intermediate results (a join filter in
// a nested loop), whose cost would grow with the square of the group.
func TestStore_GroupsOnAnIndexPool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	pool, err := dbutil.IndexPool(ctx, b.pool.Config(), 1)
	require.NoError(t, err)
	defer pool.Close()

	run := func() {
		t.Helper()
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		a, c := b.create(t, tx, invocation.StatusApproved), b.create(t, tx, invocation.StatusApproved)
		require.NoError(t, tx.Commit(ctx))
		begun, err := b.store.BeginMany(ctx, pool, []invocation.BeginArgs{{ID: a.ID, Attempt: 1}, {ID: c.ID, Attempt: 1}})
		require.NoError(t, err)
		for _, r := range begun {
			require.NoError(t, r.Err)
			require.True(t, r.Value.Started)
		}
		done, err := b.store.CompleteMany(ctx, pool, []invocation.Completion{
			{ID: a.ID, Outcome: &invocation.Outcome{Result: json.RawMessage(`{}`)}},
			{ID: c.ID, Outcome: &invocation.Outcome{Result: json.RawMessage(`{}`)}},
		})
		require.NoError(t, err)
		for _, r := range done {
			require.NoError(t, r.Err)
		}
		require.Len(t, done, 2)
	}
	run() // the plans are made on a table of two rows
	_, err = b.pool.Exec(ctx, `
		INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level,
			mode, mode_source, params, params_hash, status)
		SELECT 'org-1', 'agent', 'envelope', 'slack', 'send_message', 'write', 'allow', 'default', '{}', 'h', 'completed'
		FROM generate_series(1, 5000)`)
	require.NoError(t, err)
	run()
	run()

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for _, name := range []string{"InvocationBeginMany", "InvocationCompleteMany"} {
		// The plan kept, for a group of two: no read of a whole table.
		id := uuid.New().String()
		args := `('{` + id + `,` + id + `}', '{1,1}')`
		if name == "InvocationCompleteMany" {
			args = `('{` + id + `,` + id + `}', '{"{}","{}"}', '{"",""}', '{f,f}', '{NULL,NULL}', '{-1,-1}')`
		}
		kept := pgtest.Kept(t, conn, name, args)
		require.Zero(t, kept.Custom, name)
		require.GreaterOrEqual(t, kept.Generic, int64(3), name)
		plan := kept.Explain
		require.Contains(t, plan, "Index Scan using action_invocations_pkey", name)
		require.NotContains(t, plan, "Seq Scan", name)
		require.NotContains(t, plan, "Hash Join", name)
		require.NotContains(t, plan, "Join Filter", name)
	}
}
