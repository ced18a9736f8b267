package outbox_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/waits"
	"github.com/outboxd/outboxd/outbox"
)

// A withdrawal leaves an invocation while another call waits on it
// (package waits, seen by every process through Postgres), and cancels it once
// that wait has ended; a wait on an invocation that has ended records
// nothing, and another organization's invocation is not found.
func TestService_WithdrawLeavesWhatAnotherCallWaitsOn(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	registry := waits.New(bundle.app.Pool, 30*time.Second, slog.New(slog.DiscardHandler))
	env := slackEnvelope("withdraw-waited")
	env.Approval = "required"
	inv, _, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
	require.NoError(t, err)
	require.Equal(t, invocation.StatusPending, inv.Status)
	id := inv.ID.String()
	status := func() invocation.Status {
		got, err := bundle.svc.Get(bundle.ctx, apptest.Org, id, auth.SourceClaim{})
		require.NoError(t, err)
		return got.Status
	}
	recorded := func() (n int) {
		require.NoError(t, bundle.app.Pool.QueryRow(bundle.ctx, `SELECT count(*) FROM invocation_waits WHERE invocation_id = $1`, inv.ID).Scan(&n))
		return n
	}

	done, err := registry.Start(bundle.ctx, apptest.Org, inv.ID)
	require.NoError(t, err)
	withdrawn, err := bundle.svc.Withdraw(bundle.ctx, apptest.Org, id, "creator")
	require.NoError(t, err)
	require.False(t, withdrawn, "another call waits on it")
	require.Equal(t, invocation.StatusPending, status())

	_, err = bundle.svc.Withdraw(bundle.ctx, "org-2", id, "creator")
	require.ErrorIs(t, err, errs.NotFound)

	done()
	require.Zero(t, recorded())
	withdrawn, err = bundle.svc.Withdraw(bundle.ctx, apptest.Org, id, "creator")
	require.NoError(t, err)
	require.True(t, withdrawn)
	require.Equal(t, invocation.StatusCancelled, status())

	done, err = registry.Start(bundle.ctx, apptest.Org, inv.ID)
	require.NoError(t, err)
	require.Zero(t, recorded(), "an ended invocation records no wait")
	done()
}

// A wait whose process died without ending it (its record left behind)
// keeps the invocation from being withdrawn only until the wait's bound
// has passed: then the creator's cancellation withdraws it.
func TestService_WithdrawIgnoresAWaitPastItsBound(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	registry := waits.New(bundle.app.Pool, 30*time.Second, slog.New(slog.DiscardHandler))
	env := slackEnvelope("withdraw-stale-wait")
	env.Approval = "required"
	inv, _, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
	require.NoError(t, err)
	id := inv.ID.String()

	// The waiting process dies: its record is never ended.
	_, err = registry.Start(bundle.ctx, apptest.Org, inv.ID)
	require.NoError(t, err)
	var bound float64
	require.NoError(t, bundle.app.Pool.QueryRow(bundle.ctx, `SELECT extract(epoch FROM until - started_at) FROM invocation_waits WHERE invocation_id = $1`, inv.ID).Scan(&bound))
	require.InDelta(t, 90, bound, 1, "the wait's sync_wait and a minute")

	withdrawn, err := bundle.svc.Withdraw(bundle.ctx, apptest.Org, id, "creator")
	require.NoError(t, err)
	require.False(t, withdrawn, "within its bound, the wait counts")

	// Its bound passes (the record's time moved back rather than the test waiting).
	_, err = bundle.app.Pool.Exec(bundle.ctx, `UPDATE invocation_waits SET until = now() - interval '1 second' WHERE invocation_id = $1`, inv.ID)
	require.NoError(t, err)
	withdrawn, err = bundle.svc.Withdraw(bundle.ctx, apptest.Org, id, "creator")
	require.NoError(t, err)
	require.True(t, withdrawn, "a wait past its bound no longer counts")
	got, err := bundle.svc.Get(bundle.ctx, apptest.Org, id, auth.SourceClaim{})
	require.NoError(t, err)
	require.Equal(t, invocation.StatusCancelled, got.Status)
}
