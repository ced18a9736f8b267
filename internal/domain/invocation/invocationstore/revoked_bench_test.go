package invocationstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// BenchmarkCreateMany_Token: a transaction recording n approved
// invocations (a group commit of n requests) by no token (no lock, no
// look), by tokens (the lock and the look for their revocations, sent in
// one round trip), and, for comparison, by no token with the lock and the
// look sent as two statements of their own, with 100 revocations of other
// sessions stored, in transactions planned as outbox's (dbutil.Keyed).
// The three alternate, one transaction each, so that a
// busy machine weighs on them alike; each reports its median.
func BenchmarkCreateMany_Token(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Pool(b)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(b, err)
	store := invocationstore.NewRecording(client, revocation.Refusals{})
	_, err = pool.Exec(ctx, `INSERT INTO token_revocations (organization_id, session_id, issued_before, revoked_by)
		SELECT 'org-1', 'old-' || i, now(), 'bench' FROM generate_series(1, 100) AS i`)
	require.NoError(b, err)
	iat := time.Now().Add(-time.Minute)
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var none, token, twoTrips []time.Duration
			for b.Loop() {
				start := time.Now()
				create(b, ctx, pool, store, n, false, &iat, false)
				none = append(none, time.Since(start))
				start = time.Now()
				create(b, ctx, pool, store, n, true, &iat, false)
				token = append(token, time.Since(start))
				start = time.Now()
				create(b, ctx, pool, store, n, false, &iat, true)
				twoTrips = append(twoTrips, time.Since(start))
			}
			b.ReportMetric(float64(median(none).Microseconds()), "µs/tx-no-token")
			b.ReportMetric(float64(median(token).Microseconds()), "µs/tx-token")
			b.ReportMetric(float64(median(twoTrips).Microseconds()), "µs/tx-two-trips")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func create(b *testing.B, ctx context.Context, pool *pgxpool.Pool, store *invocationstore.Store, n int, withToken bool, iat *time.Time, twoTrips bool) {
	ps := make([]*invocation.CreateParams, n)
	for i := range ps {
		p := &invocation.CreateParams{
			ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", SessionID: fmt.Sprintf("s-%d", i), RequestedBy: "agent",
			Origin: "invoke", Integration: "slack", Action: "send_message", RiskLevel: "write",
			Mode: "allow", ModeSource: "org_default", Params: json.RawMessage(`{"channel":"C1"}`),
			ParamsHash: "h", Status: invocation.StatusApproved, Approval: "auto", Retry: &invocation.Retry{MaxAttempts: 2, BaseDelay: time.Second},
		}
		if withToken {
			p.Token = &invocation.Token{JTI: uuid.NewString(), SessionID: p.SessionID, Subject: "agent", IssuedAt: iat}
		}
		ps[i] = p
	}
	tx, err := dbutil.Keyed{Pool: pool}.Begin(ctx) // as outbox records them
	require.NoError(b, err)
	if twoTrips {
		_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared(hashtextextended('token_revocations/' || $1::text, 0))`, "org-1")
		require.NoError(b, err)
		var k int
		err = tx.QueryRow(ctx, `SELECT count(*) FROM token_revocations WHERE organization_id = $1 AND session_id = $2`, "org-1", "s-0").Scan(&k)
		require.NoError(b, err)
	}
	_, err = store.CreateMany(ctx, tx, ps)
	require.NoError(b, err)
	require.NoError(b, tx.Commit(ctx))
}
