package invocationstore_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestStore_FeedCommitOrder: an event id is taken at insert, so a later id
// can commit first. A feed must deliver it without losing the earlier id
// that commits afterwards, and must not deliver an event while a
// transaction that could precede it is open.
func TestStore_FeedCommitOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	feed := func(after invocation.Cursor) ([]invocation.FeedItem, bool) {
		t.Helper()
		items, held, err := b.store.Feed(ctx, b.pool, &invocation.FeedParams{Org: "org-1", After: after})
		require.NoError(t, err)
		return items, held
	}
	// settled reads the feed until nothing is held back: the horizon is
	// the cluster's, so transactions of parallel tests may hold it a moment.
	settled := func(after invocation.Cursor) []invocation.FeedItem {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			items, held := feed(after)
			if !held || time.Now().After(deadline) {
				return items
			}
		}
	}
	start, err := b.store.FeedNow(ctx, b.pool)
	require.NoError(t, err)

	// A takes its transaction id first, B second; B inserts its event
	// first (the lower id), A second; A commits, B is still open.
	txA, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer txA.Rollback(ctx)
	_, err = txA.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	txB, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer txB.Rollback(ctx)
	_, err = txB.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	invB := b.create(t, txB, invocation.StatusPending)
	invA := b.create(t, txA, invocation.StatusPending)
	require.NoError(t, txA.Commit(ctx))

	var items []invocation.FeedItem
	for deadline := time.Now().Add(10 * time.Second); len(items) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		items, _ = feed(start)
	}
	require.Len(t, items, 1, "A's transaction is older than every open one")
	require.Equal(t, invA.ID, items[0].InvocationID)
	cursor := items[0].Cursor

	require.NoError(t, txB.Commit(ctx))
	items = settled(cursor)
	require.Len(t, items, 1, "B's event, with the lower id, still comes after the cursor")
	require.Equal(t, invB.ID, items[0].InvocationID)
	require.Less(t, items[0].ID, cursor.ID)
	require.Equal(t, invocation.NoticeApprovalRequest, items[0].Notice)
	// The stream's ids are positions: they grow where event ids do not.
	first, second := bigInt(t, cursor.Position()), bigInt(t, items[0].Cursor.Position())
	require.Equal(t, -1, first.Cmp(second), "position %s before %s", first, second)
	parsed, ok := invocation.ParsePosition(items[0].Cursor.Position())
	require.True(t, ok)
	require.Equal(t, items[0].Cursor, parsed)

	// Resuming from an id finds the same position.
	resumed, err := b.store.FeedCursor(ctx, b.pool, "org-1", cursor.ID)
	require.NoError(t, err)
	require.Equal(t, cursor, resumed)
	_, err = b.store.FeedCursor(ctx, b.pool, "org-2", cursor.ID)
	require.ErrorIs(t, err, invocation.ErrEventNotFound)

	// An event committed while an older transaction is open is held back.
	txC, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer txC.Rollback(ctx)
	_, err = txC.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	invD := b.create(t, tx, invocation.StatusPending)
	require.NoError(t, tx.Commit(ctx))
	items, held := feed(items[0].Cursor)
	require.Empty(t, items)
	require.True(t, held)
	require.NoError(t, txC.Rollback(ctx))
	items = settled(resumed)
	require.Len(t, items, 2)
	require.Equal(t, invD.ID, items[1].InvocationID)
}

func bigInt(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	require.True(t, ok, s)
	return n
}

// TestStore_FeedsReadTheNoticeIndexes: the feed indexes hold only the
// events that make a notice (migration 020), so they serve the feeds only
// if each feed's query implies their predicate. With sequential scans
// priced out, the planner reads each feed through its index; a query that
// did not imply the predicate could not use it.
func TestStore_FeedsReadTheNoticeIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	pending := b.create(t, tx, invocation.StatusPending)
	b.create(t, tx, invocation.StatusApproved) // created approved: no notice
	require.NoError(t, tx.Commit(ctx))

	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET enable_seqscan = off`)
	require.NoError(t, err)
	// Both feeds find the pending invocation's request, and only it, once
	// the cluster's open transactions (parallel tests') are behind it.
	var feed, feedAll []invocation.FeedItem
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		feed, _, err = b.store.Feed(ctx, conn, &invocation.FeedParams{Org: "org-1"})
		require.NoError(t, err)
		feedAll, _, err = b.store.FeedAll(ctx, conn, invocation.Cursor{}, invocation.FeedScope{All: true}, 10)
		require.NoError(t, err)
		if len(feed) > 0 && len(feedAll) > 0 {
			break
		}
	}
	for _, items := range [][]invocation.FeedItem{feed, feedAll} {
		require.Len(t, items, 1)
		require.Equal(t, pending.ID, items[0].InvocationID)
		require.Equal(t, invocation.NoticeApprovalRequest, items[0].Notice)
	}

	notices := `'{action_approval_request,action_approval_result,action_completed}'`
	plan := pgtest.Kept(t, conn, "FeedList", `('org-1', '0', 0, `+notices+`, NULL, 100)`).Explain
	require.Contains(t, plan, "invocation_events_org_xid", plan)
	plan = pgtest.Kept(t, conn, "FeedListAll", `('0', 0, true, '{}', 100)`).Explain
	require.Contains(t, plan, "invocation_events_xid", plan)
}

// TestStore_FeedNotHeldByOtherDatabases: a writing transaction left open
// in another database of the same server cannot write events here, so it
// holds back no feed; before the horizon was this database's, it held
// every organization's streams, webhooks and Slack messages for as long as
// it stayed open.
func TestStore_FeedNotHeldByOtherDatabases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other, err := pgx.Connect(ctx, pgtest.URL(t))
	require.NoError(t, err)
	defer other.Close(ctx)
	away, err := other.Begin(ctx)
	require.NoError(t, err)
	defer away.Rollback(ctx)
	var awayXID int64
	require.NoError(t, away.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&awayXID))

	start, err := b.store.FeedNow(ctx, b.pool)
	require.NoError(t, err)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	inv := b.create(t, tx, invocation.StatusPending)
	require.NoError(t, tx.Commit(ctx))

	// Transactions of parallel tests in this database's cluster end; the
	// one in the other database stays open throughout.
	var items, all []invocation.FeedItem
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && (len(items) == 0 || len(all) == 0); time.Sleep(20 * time.Millisecond) {
		items, _, err = b.store.Feed(ctx, b.pool, &invocation.FeedParams{Org: "org-1", After: start})
		require.NoError(t, err)
		all, _, err = b.store.FeedAll(ctx, b.pool, start, invocation.FeedScope{All: true}, 10)
		require.NoError(t, err)
	}
	for _, got := range [][]invocation.FeedItem{items, all} {
		require.Len(t, got, 1, "the open transaction of the other database holds the feed back")
		require.Equal(t, inv.ID, got[0].InvocationID)
		require.Greater(t, got[0].Cursor.XID, awayXID)
	}
	now, err := b.store.FeedNow(ctx, b.pool)
	require.NoError(t, err)
	require.Greater(t, now.XID, awayXID, "a feed starting now starts past the other database's transaction")
}
