package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/relay"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// noteArgs is the job a test consumer makes of a notice. Notes go on a
// queue nobody works, so they stay in river_job to be counted.
type noteArgs struct {
	Consumer string `json:"consumer"`
	EventID  int64  `json:"event_id"`
	Notice   string `json:"notice"`
}

func (noteArgs) Kind() string                 { return "relay_test_note" }
func (noteArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: "relay_test_notes"} }

type noteWorker struct{ river.WorkerDefaults[noteArgs] }

func (noteWorker) Work(context.Context, *river.Job[noteArgs]) error { return nil }

// notes returns the event ids of a consumer's notes in the order they were
// inserted.
func notes(t *testing.T, pool *pgxpool.Pool, consumer string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT (args->>'event_id')::bigint FROM river_job WHERE kind = 'relay_test_note' AND args->>'consumer' = $1 ORDER BY id`, consumer)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

// noticeIDs returns the ids of the events of the organizations that make a
// notice, in feed order.
func noticeIDs(t *testing.T, pool *pgxpool.Pool, orgs ...string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT id FROM invocation_events WHERE notice IS NOT NULL AND organization_id = ANY($1) ORDER BY xid, id`, orgs)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

// newStore returns a fresh database's pool and an invocation store that
// inserts its jobs there.
func newStore(t *testing.T) (*pgxpool.Pool, *invocationstore.Store) {
	t.Helper()
	pool := pgtest.Pool(t)
	inserter, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	return pool, invocationstore.New(inserter)
}

// noteJobs is a test consumer's Jobs: a note for each notice.
func noteJobs(name string, items []invocation.FeedItem) []river.InsertManyParams {
	var jobs []river.InsertManyParams
	for _, it := range items {
		jobs = append(jobs, river.InsertManyParams{Args: noteArgs{Consumer: name, EventID: it.ID, Notice: string(it.Notice)}})
	}
	return jobs
}

// runRelay runs rl's relay jobs until the test ends and waits for each of
// the consumers' cursors: they start at the horizon of their first run.
func runRelay(t *testing.T, pool *pgxpool.Pool, rl *relay.Relay, consumers ...string) {
	t.Helper()
	ctx := context.Background()
	workers := river.NewWorkers()
	rl.AddWorkers(workers)
	river.AddWorker(workers, noteWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:       map[string]river.QueueConfig{"relay_test": {MaxWorkers: 2}},
		PeriodicJobs: rl.PeriodicJobs(),
		Workers:      workers,
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() { require.NoError(t, client.Stop(context.Background())) })
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM relay_cursors WHERE consumer = ANY($1)`, consumers).Scan(&n))
		return n == len(consumers)
	}, 15*time.Second, 20*time.Millisecond)
}

// createIn creates an invocation of org in tx; a pending one makes a
// notice.
func createIn(t *testing.T, store *invocationstore.Store, tx pgx.Tx, org string, status invocation.Status) {
	t.Helper()
	p := &invocation.CreateParams{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: org, SessionID: "session-1", RequestedBy: "agent",
		Origin: "invoke", Integration: "slack", Action: "send_message", RiskLevel: "write",
		Mode: "require_approval", ModeSource: "inferred_default", Params: json.RawMessage(`{}`),
		ParamsHash: "h", Status: status, Approval: "auto", Retry: &invocation.Retry{MaxAttempts: 1, BaseDelay: time.Second},
	}
	if status == invocation.StatusPending {
		expires := time.Now().Add(time.Hour)
		p.ExpiresAt = &expires
	}
	_, err := store.CreateMany(context.Background(), tx, []*invocation.CreateParams{p})
	require.NoError(t, err)
}

// TestRelay_TwoConsumers: each consumer gets every notice in its scope
// once, in feed order, and nothing else; a consumer that fails keeps its
// cursor, gets the notices once it recovers, and holds nobody else up.
func TestRelay_TwoConsumers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, store := newStore(t)

	var failing atomic.Bool
	failing.Store(true)
	var failures atomic.Int32
	note := func(name string) func(context.Context, pgx.Tx, []invocation.FeedItem) ([]river.InsertManyParams, error) {
		return func(_ context.Context, _ pgx.Tx, items []invocation.FeedItem) ([]river.InsertManyParams, error) {
			if name == "b" && failing.Load() {
				failures.Add(1)
				return nil, errors.New("b is down")
			}
			return noteJobs(name, items), nil
		}
	}
	rl := relay.New(pool)
	rl.Add(relay.Consumer{Name: "a", Every: 50 * time.Millisecond, Queue: "relay_test", Jobs: note("a")})
	rl.Add(relay.Consumer{Name: "b", Every: 50 * time.Millisecond, Queue: "relay_test", Jobs: note("b"),
		Scope: func(context.Context, pgx.Tx) (invocation.FeedScope, error) {
			return invocation.FeedScope{Orgs: []string{"org-1"}}, nil
		}})
	require.Panics(t, func() { rl.Add(relay.Consumer{Name: "a", Jobs: note("a")}) }, "names are unique")
	runRelay(t, pool, rl, "a", "b")

	create := func(org string, status invocation.Status) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		createIn(t, store, tx, org, status)
		require.NoError(t, tx.Commit(ctx))
	}
	create("org-1", invocation.StatusPending)
	create("org-1", invocation.StatusApproved) // created approved: no notice
	create("org-2", invocation.StatusPending)
	create("org-1", invocation.StatusPending)
	all, org1 := noticeIDs(t, pool, "org-1", "org-2"), noticeIDs(t, pool, "org-1")
	require.Len(t, all, 3)
	require.Len(t, org1, 2)

	// a gets its notices while b fails; b's cursor stays before them.
	require.Eventually(t, func() bool { return len(notes(t, pool, "a")) == len(all) }, 15*time.Second, 20*time.Millisecond)
	require.Equal(t, all, notes(t, pool, "a"))
	require.Eventually(t, func() bool { return failures.Load() >= 2 }, 15*time.Second, 20*time.Millisecond)
	require.Empty(t, notes(t, pool, "b"))
	var before bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT (c.after_xid, c.after_id) < (e.xid, e.id)
		FROM relay_cursors c, invocation_events e WHERE c.consumer = 'b' AND e.id = $1`, org1[0]).Scan(&before))
	require.True(t, before, "a failing consumer's cursor does not move past what it failed on")

	// Recovered, b gets its scope's notices once, in order.
	failing.Store(false)
	require.Eventually(t, func() bool { return len(notes(t, pool, "b")) == len(org1) }, 15*time.Second, 20*time.Millisecond)
	require.Equal(t, org1, notes(t, pool, "b"))

	// A later notice reaches both after the earlier ones, none repeated.
	create("org-1", invocation.StatusPending)
	all, org1 = noticeIDs(t, pool, "org-1", "org-2"), noticeIDs(t, pool, "org-1")
	require.Eventually(t, func() bool {
		return len(notes(t, pool, "a")) >= len(all) && len(notes(t, pool, "b")) >= len(org1)
	}, 15*time.Second, 20*time.Millisecond)
	require.Equal(t, all, notes(t, pool, "a"))
	require.Equal(t, org1, notes(t, pool, "b"))
}

// TestRelay_ScopeAndNoticesAreReadTogether: an organization that joins a
// consumer's scope (its first webhook endpoint) in a transaction that
// commits while a relay run is between reading the scope and reading the
// notices, with a notice of that organization committed in the same
// moment, still gets that notice: the run reads both in one snapshot, so
// it sees neither, and the next run sees both. (Read one statement at a
// time, the notice was read, found out of scope and passed over for good.)
func TestRelay_ScopeAndNoticesAreReadTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, store := newStore(t)
	_, err := pool.Exec(ctx, `CREATE TABLE relay_test_scope (org text NOT NULL)`)
	require.NoError(t, err)

	// Two transactions that hold their ids from before the run starts: one
	// adds org-3 to the scope, the other makes a notice of org-3.
	joining := make(chan [2]pgx.Tx, 1)
	rl := relay.New(pool)
	rl.Add(relay.Consumer{Name: "late", Every: 50 * time.Millisecond, Queue: "relay_test",
		Scope: func(ctx context.Context, tx pgx.Tx) (invocation.FeedScope, error) {
			rows, err := tx.Query(ctx, `SELECT org FROM relay_test_scope`)
			if err != nil {
				return invocation.FeedScope{}, err
			}
			orgs, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return invocation.FeedScope{}, err
			}
			select {
			case txs := <-joining: // both commit between the two reads
				for _, other := range txs {
					if err := other.Commit(ctx); err != nil {
						return invocation.FeedScope{}, err
					}
				}
			default:
			}
			return invocation.FeedScope{Orgs: orgs}, nil
		},
		Jobs: func(_ context.Context, _ pgx.Tx, items []invocation.FeedItem) ([]river.InsertManyParams, error) {
			return noteJobs("late", items), nil
		}})
	runRelay(t, pool, rl, "late")

	join, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = join.Exec(ctx, `INSERT INTO relay_test_scope VALUES ('org-3')`)
	require.NoError(t, err)
	notice, err := pool.Begin(ctx)
	require.NoError(t, err)
	createIn(t, store, notice, "org-3", invocation.StatusPending)
	joining <- [2]pgx.Tx{join, notice}

	require.Eventually(t, func() bool { return len(joining) == 0 && len(noticeIDs(t, pool, "org-3")) == 1 }, 15*time.Second, 20*time.Millisecond)
	want := noticeIDs(t, pool, "org-3")
	require.Eventually(t, func() bool { return len(notes(t, pool, "late")) == 1 }, 15*time.Second, 20*time.Millisecond,
		"the notice of an organization that joined the scope mid-run is relayed")
	require.Equal(t, want, notes(t, pool, "late"))
}
