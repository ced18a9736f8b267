package feed

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// writeEvent inserts an announced event (an end) of org on db.
func writeEvent(t *testing.T, db dbsqlc.DBTX, org string) {
	t.Helper()
	_, err := db.Exec(context.Background(), `INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status)
		VALUES (gen_random_uuid(), $1, 1, 'completed', 'executing', 'completed')`, org)
	require.NoError(t, err)
}

// heard returns the organization of the next notification on conn, or ""
// when none comes within wait.
func heard(t *testing.T, conn *pgx.Conn, wait time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if ctx.Err() != nil {
		return ""
	}
	require.NoError(t, err)
	var ev struct {
		OrganizationID string `json:"organization_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.Payload), &ev))
	require.NotEmpty(t, ev.OrganizationID)
	return ev.OrganizationID
}

// setupWaiter returns a fresh database's pool, a connection LISTENing
// there, and a running waiter on the pool (the tests renew by hand; its
// own renewals come every 30 s).
func setupWaiter(t *testing.T) (*pgxpool.Pool, *pgx.Conn, *waiter) {
	t.Helper()
	pool, conn, w := newListeningWaiter(t)
	startWaiter(t, w)
	return pool, conn, w
}

// startWaiter runs w until the test ends.
func startWaiter(t *testing.T, w *waiter) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
}

// newListeningWaiter returns a fresh database's pool, a connection
// LISTENing there, and a waiter on the pool that does not run yet.
func newListeningWaiter(t *testing.T) (*pgxpool.Pool, *pgx.Conn, *waiter) {
	t.Helper()
	pool := pgtest.Pool(t)
	conn, err := pgx.ConnectConfig(context.Background(), pool.Config().ConnConfig.Copy())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(context.Background(), "LISTEN "+invocation.EventsChannel)
	require.NoError(t, err)
	return pool, conn, newWaiter(pool, slog.New(slog.DiscardHandler))
}

// waiterListens reports whether a backend other than conn's LISTENs on
// pool's database.
func waiterListens(t *testing.T, pool *pgxpool.Pool, conn *pgx.Conn) bool {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN `+invocation.EventsChannel+`%' AND pid <> $1`,
		conn.PgConn().PID()).Scan(&n))
	return n > 0
}

// TestWaiter_ListensOnlyWhileSubscribed: the waiter holds no listening
// backend until a subscriber comes, wakes the subscriber once it returns,
// hangs up at the renewal after the last subscriber left, and listens
// again for the next one.
func TestWaiter_ListensOnlyWhileSubscribed(t *testing.T) {
	t.Parallel()
	pool, conn, w := setupWaiter(t)
	ctx := context.Background()
	require.False(t, waiterListens(t, pool, conn), "listening with no subscriber")

	for range 2 {
		ch, unsubscribe := w.subscribeOrg(ctx, "org-a")
		require.True(t, waiterListens(t, pool, conn), "a subscription returned before its listener was up")
		select { // the connection's first wake-up, for subscribers that came before it
		case <-ch:
		default:
		}
		writeEvent(t, pool, "org-a")
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("the subscriber was not woken")
		}
		unsubscribe()
		require.NoError(t, w.renew(ctx))
		require.Eventually(t, func() bool { return !waiterListens(t, pool, conn) }, 5*time.Second, 20*time.Millisecond,
			"still listening after the last subscriber left")
	}
}

// TestWaiter_WakesCatalogWatchers: a change of what shapes an
// organization's catalog (migration 026's triggers) rings that
// organization's catalog watchers and no other organization's.
func TestWaiter_WakesCatalogWatchers(t *testing.T) {
	t.Parallel()
	pool, _, w := setupWaiter(t)
	ctx := context.Background()
	chA, doneA := w.subscribeCatalog(ctx, "org-a")
	defer doneA()
	chB, doneB := w.subscribeCatalog(ctx, "org-b")
	defer doneB()
	drain := func(ch <-chan struct{}) {
		select { // the connection's first wake-up
		case <-ch:
		default:
		}
	}
	drain(chA)
	drain(chB)
	rang := func(ch <-chan struct{}, wait time.Duration) bool {
		select {
		case <-ch:
			return true
		case <-time.After(wait):
			return false
		}
	}
	for _, change := range []string{
		`INSERT INTO action_modes (organization_id, scope, scope_id, source_id, action_id, mode, updated_by)
			VALUES ('org-a', 'org', '', 'slack', 'post_message', 'deny', 'u')`,
		`UPDATE action_modes SET mode = 'allow' WHERE organization_id = 'org-a'`,
		`DELETE FROM action_modes WHERE organization_id = 'org-a'`,
		`INSERT INTO credentials (organization_id, integration, user_id, sealed, created_by) VALUES ('org-a', 'linear', '', '\x00', 'u')`,
		`DELETE FROM credentials WHERE organization_id = 'org-a'`,
		`INSERT INTO org_connectors (organization_id, name, url, created_by) VALUES ('org-a', 'notes', 'https://mcp.example.com', 'u')`,
		`UPDATE org_connectors SET tool_risk_overrides = '{"search": {"mode": "allow", "hash": "h"}}' WHERE organization_id = 'org-a'`,
		`DELETE FROM org_connectors WHERE organization_id = 'org-a'`,
		`INSERT INTO org_databases (organization_id, name, host, database, statement_timeout_ms, max_rows, created_by)
			VALUES ('org-a', 'main', 'db.example.com', 'app', 1000, 100, 'u')`,
		`DELETE FROM org_databases WHERE organization_id = 'org-a'`,
	} {
		_, err := pool.Exec(ctx, change)
		require.NoError(t, err, change)
		require.True(t, rang(chA, 5*time.Second), "the catalog watcher was not woken by: %s", change)
	}
	require.False(t, rang(chB, 200*time.Millisecond), "another organization's catalog watcher was woken")
}

func TestWaiter_AnnouncesOnlyWhatSomeoneListensFor(t *testing.T) {
	t.Parallel()
	pool, conn, w := setupWaiter(t)
	ctx := context.Background()

	writeEvent(t, pool, "org-a")
	require.Empty(t, heard(t, conn, 300*time.Millisecond), "an event of an organization nobody listens to was announced")

	done := w.listen(ctx, "org-a")
	writeEvent(t, pool, "org-b")
	writeEvent(t, pool, "org-a")
	require.Equal(t, "org-a", heard(t, conn, 5*time.Second))
	require.Empty(t, heard(t, conn, 300*time.Millisecond), "org-b's event was announced")

	// The last subscriber gone, the next renewal forgets the organization
	// and its row runs out; an expired row announces nothing and the
	// renewal deletes it.
	done()
	require.NoError(t, w.renew(ctx))
	require.Empty(t, w.orgs)
	_, err := pool.Exec(ctx, `UPDATE event_listeners SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
	writeEvent(t, pool, "org-a")
	require.Empty(t, heard(t, conn, 300*time.Millisecond), "an expired registration still announced")
	require.NoError(t, w.renew(ctx))
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM event_listeners`).Scan(&rows))
	require.Zero(t, rows)
}

func TestWaiter_RenewalKeepsSubscribedOrganizations(t *testing.T) {
	t.Parallel()
	pool, _, w := setupWaiter(t)
	ctx := context.Background()

	done := w.listen(ctx, "org-a")
	defer done()
	// The row went missing (a failover, an operator): the renewal writes
	// it again with a new expiry.
	_, err := pool.Exec(ctx, `DELETE FROM event_listeners`)
	require.NoError(t, err)
	require.NoError(t, w.renew(ctx))
	var left time.Duration
	require.NoError(t, pool.QueryRow(ctx, `SELECT expires_at - now() FROM event_listeners WHERE organization_id = 'org-a' AND listener_id = $1`, w.id).Scan(&left))
	require.InDelta(t, listenerTTL.Seconds(), left.Seconds(), 5)
}

func TestWaiter_RegistrationWaitsForTransactionsThatCheckedWithoutIt(t *testing.T) {
	t.Parallel()
	pool, conn, w := setupWaiter(t)
	ctx := context.Background()

	// A transaction writes an end event while nobody listens, and has not
	// committed when a subscriber registers.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	writeEvent(t, tx, "org-a")

	registered := make(chan func())
	go func() { registered <- w.listen(ctx, "org-a") }()
	// The registration must be blocked on the transaction's lock, not
	// merely slow: wait until a backend of the database waits for an
	// advisory lock.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting))
		select {
		case <-registered:
			t.Fatal("the registration returned while a transaction that announced nothing was still open: a subscriber reading now would miss its change")
		default:
		}
		if waiting {
			break
		}
		require.True(t, time.Now().Before(deadline), "the registration never waited for the open transaction")
	}
	require.NoError(t, tx.Commit(ctx))
	select {
	case done := <-registered:
		defer done()
	case <-time.After(5 * time.Second):
		t.Fatal("the registration did not finish once the transaction committed")
	}

	// From then on the organization's events are announced.
	writeEvent(t, pool, "org-a")
	require.Equal(t, "org-a", heard(t, conn, 5*time.Second))
}

// TestWaiter_FirstSubscriberGoneBeforeTheConnection: the first subscriber
// of an organization, gone (its client hung up) while the listening
// connection was not up yet, still registers the organization for the
// subscribers after it. It used to return without registering and without
// saying the registration had ended, so every later subscriber of the
// organization in the process waited for it until its own request ended,
// and no event of the organization was announced.
func TestWaiter_FirstSubscriberGoneBeforeTheConnection(t *testing.T) {
	t.Parallel()
	pool, conn, w := newListeningWaiter(t)

	// No connection yet (the waiter does not run): the first subscriber
	// waits for one, and its client goes away meanwhile.
	gone, hangUp := context.WithCancel(context.Background())
	hangUp()
	_, unsubscribe := w.subscribeOrg(gone, "org-a")
	unsubscribe()

	startWaiter(t, w)

	wait, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	subscribed := make(chan func(), 1)
	go func() {
		_, unsubscribe := w.subscribeOrg(wait, "org-a")
		subscribed <- unsubscribe
	}()
	select {
	case unsubscribe := <-subscribed:
		defer unsubscribe()
	case <-time.After(2*listenerLockTimeout + 5*time.Second):
		t.Fatal("the next subscriber still waits for the registration of the one that left")
	}
	writeEvent(t, pool, "org-a")
	require.Equal(t, "org-a", heard(t, conn, 5*time.Second), "the organization's events are not announced")
}
