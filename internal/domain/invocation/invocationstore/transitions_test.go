package invocationstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
)

// origin is a status to start a transition from, and how the store brings
// a new invocation there.
type origin struct {
	name   string
	status invocation.Status
	// discarded: a dead letter an operator discarded (still failed).
	discarded bool
	steps     []func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error
}

// origins are every status, and the discarded dead letter, each reached
// through the store's own methods.
func origins() []origin {
	start := func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error {
		_, err := b.store.Start(ctx, tx, inv.ID, 1)
		return err
	}
	fail := func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error {
		_, err := b.store.Fail(ctx, tx, inv.ID, "boom", nil)
		return err
	}
	type stepFn = func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error
	return []origin{
		{name: "pending", status: invocation.StatusPending},
		{name: "approved", status: invocation.StatusApproved},
		{name: "denied", status: invocation.StatusDenied},
		{name: "executing", status: invocation.StatusApproved, steps: []stepFn{start}},
		{name: "completed", status: invocation.StatusApproved, steps: []stepFn{start,
			func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error {
				return b.store.Complete(ctx, tx, inv.ID, &invocation.Outcome{Result: json.RawMessage(`{}`)})
			}}},
		{name: "failed", status: invocation.StatusApproved, steps: []stepFn{start, fail}},
		{name: "skipped", status: invocation.StatusApproved, steps: []stepFn{
			func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error {
				_, err := b.store.Skip(ctx, tx, inv.ID, "gate")
				return err
			}}},
		{name: "expired", status: invocation.StatusPending, steps: []stepFn{
			func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error {
				_, err := b.store.Expire(ctx, tx, inv)
				return err
			}}},
		{name: "cancelled", status: invocation.StatusPending, steps: []stepFn{
			func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error {
				_, err := b.store.Cancel(ctx, tx, inv.ID, "alice")
				return err
			}}},
		{name: "failed, discarded", status: invocation.StatusApproved, discarded: true, steps: []stepFn{start, fail,
			func(ctx context.Context, b *testBundle, tx pgx.Tx, inv invocation.Invocation) error {
				_, err := b.store.Discard(ctx, tx, inv.ID, "alice")
				return err
			}}},
	}
}

// applier makes one transition through a store method; a refusal is
// ErrConflict.
type applier struct {
	name  string
	event invocation.EventType
	apply func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error
}

func appliers() []applier {
	ignore := func(_ invocation.Invocation, err error) error { return err }
	return []applier{
		{"Approve", invocation.EventApproved, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Approve(ctx, tx, inv.ID, "alice", false))
		}},
		{"Deny", invocation.EventDenied, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Deny(ctx, tx, inv.ID, "alice", "human", "no"))
		}},
		{"Expire", invocation.EventExpired, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Expire(ctx, tx, inv))
		}},
		{"Cancel", invocation.EventCancelled, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Cancel(ctx, tx, inv.ID, "alice"))
		}},
		{"Start", invocation.EventStarted, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Start(ctx, tx, inv.ID, 2))
		}},
		// Begin starts when no gate can apply (none here) and reports a
		// refusal as not started.
		{"Begin", invocation.EventStarted, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			_, _, started, err := s.Begin(ctx, tx, inv.ID, 2)
			if err == nil && !started {
				err = errs.Conflict
			}
			return err
		}},
		{"Complete", invocation.EventCompleted, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return s.Complete(ctx, tx, inv.ID, &invocation.Outcome{Result: json.RawMessage(`{"ok":true}`)})
		}},
		{"Fail", invocation.EventFailed, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Fail(ctx, tx, inv.ID, "boom", nil))
		}},
		{"Skip", invocation.EventSkipped, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Skip(ctx, tx, inv.ID, "gate"))
		}},
		{"ScheduleRetry", invocation.EventRetryScheduled, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.ScheduleRetry(ctx, tx, inv.ID, "try again", nil, false))
		}},
		{"Snooze", invocation.EventSnoozed, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Snooze(ctx, tx, inv.ID, "wait", nil, false))
		}},
		{"Replay", invocation.EventReplayed, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Replay(ctx, tx, inv, "alice"))
		}},
		{"Discard", invocation.EventDiscarded, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Discard(ctx, tx, inv.ID, "alice"))
		}},
		{"Edit", invocation.EventEdited, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.Edit(ctx, tx, inv.ID, &invocationstore.EditParams{
				Actor: "alice", Params: json.RawMessage(`{"text":"edited"}`), Edit: json.RawMessage(`{"by":"alice"}`),
				IntentDigest: "d2", Intent: json.RawMessage(`{}`),
			}))
		}},
		{"IntentChanged", invocation.EventIntentChanged, func(ctx context.Context, s *invocationstore.Store, tx pgx.Tx, inv invocation.Invocation) error {
			return ignore(s.IntentChanged(ctx, tx, inv, &invocationstore.IntentChangedParams{
				ExpiresAt: time.Now().Add(time.Hour), IntentDigest: "d3", Intent: json.RawMessage(`{}`), Changes: []string{"tool redefined"},
			}))
		}},
	}
}

// TestTransitions runs every transition from every status through the
// store and checks the answer against invocation.Transitions: an allowed
// one leaves the table's status and records its event; a refused one is
// ErrConflict and changes neither the row nor the timeline.
func TestTransitions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	// The table and the store's methods cover the same events, and every
	// event but created is a transition.
	inTable := map[invocation.EventType]bool{}
	for _, tr := range invocation.Transitions {
		require.False(t, inTable[tr.Event], "%s is in the table twice", tr.Event)
		inTable[tr.Event] = true
	}
	applied := map[invocation.EventType]bool{}
	for _, a := range appliers() {
		require.True(t, inTable[a.event], "%s makes %s, which the table does not list", a.name, a.event)
		applied[a.event] = true
	}
	for _, e := range []invocation.EventType{
		invocation.EventApproved, invocation.EventDenied, invocation.EventExpired, invocation.EventCancelled,
		invocation.EventStarted, invocation.EventCompleted, invocation.EventFailed, invocation.EventSkipped,
		invocation.EventRetryScheduled, invocation.EventSnoozed, invocation.EventReplayed, invocation.EventDiscarded,
		invocation.EventEdited, invocation.EventIntentChanged,
	} {
		require.True(t, inTable[e], "%s is not in the table", e)
		require.True(t, applied[e], "no store method makes %s", e)
	}
	require.False(t, inTable[invocation.EventCreated])

	seen := map[invocation.Status]bool{}
	for _, o := range origins() {
		for _, a := range appliers() {
			t.Run(a.name+"/from "+o.name, func(t *testing.T) {
				tx := b.begin(t)
				inv := b.create(t, tx, o.status)
				for _, step := range o.steps {
					require.NoError(t, step(ctx, b, tx, inv))
				}
				before, err := b.store.GetByID(ctx, tx, inv.ID)
				require.NoError(t, err)
				require.Equal(t, o.discarded, before.DiscardedAt != nil)
				seen[before.Status] = true
				events, err := b.store.Events(ctx, tx, "org-1", inv.ID)
				require.NoError(t, err)

				to, allowed := invocation.Next(a.event, before.Status)
				for _, tr := range invocation.Transitions {
					if tr.Event == a.event && tr.DeadLetterOnly && o.discarded {
						allowed = false
					}
				}

				err = a.apply(ctx, b.store, tx, before)
				after, gerr := b.store.GetByID(ctx, tx, inv.ID)
				require.NoError(t, gerr)
				timeline, gerr := b.store.Events(ctx, tx, "org-1", inv.ID)
				require.NoError(t, gerr)
				if !allowed {
					require.ErrorIs(t, err, errs.Conflict, "the table refuses %s from %s", a.event, o.name)
					require.Equal(t, before, after, "a refused transition changes nothing")
					require.Equal(t, events, timeline, "a refused transition records no event")
					return
				}
				require.NoError(t, err, "the table allows %s from %s", a.event, o.name)
				require.Equal(t, to, after.Status)
				require.Len(t, timeline, len(events)+1)
				last := timeline[len(timeline)-1]
				require.Equal(t, a.event, last.Type)
				require.Equal(t, before.Status, last.From)
				require.Equal(t, to, last.To)
			})
		}
	}
	for _, s := range invocation.Statuses {
		require.True(t, seen[s], "no origin in status %s", s)
	}
}
