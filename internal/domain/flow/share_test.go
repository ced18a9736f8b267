package flow_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/flow"
)

// shareRetry is the ConcurrencyRetry of the share tests.
const shareRetry = 100 * time.Millisecond

// pluginLike is a global bucket like the plugins' (executors/plugin): 8
// slots for every organization, so 6 for any one. Its tokens do not refill
// during a test, so what is left of them is exact.
var pluginLike = flow.BucketConfig{Name: "plugin", Rate: 1, Interval: time.Hour, Burst: 20, MaxConcurrency: 8}

// requireShareWait: refused as for a full bucket, nothing taken.
func requireShareWait(t *testing.T, g flow.Grant) {
	t.Helper()
	require.False(t, g.Granted())
	require.Nil(t, g.Lease)
	require.InDelta(t, shareRetry, g.Wait, float64(shareRetry)/5+1, "ConcurrencyRetry jittered by ±20%")
}

func tokensLeft(t *testing.T, pool *pgxpool.Pool, bucket string) float64 {
	t.Helper()
	var tokens float64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT tokens FROM flow_buckets WHERE name = $1`, bucket).Scan(&tokens))
	return tokens
}

// TestLimiter_OrgShareOfGlobalBucket: one organization holds at most three
// quarters of a global bucket's slots (6 of the plugin bucket's 8), in
// every process, so that one whose calls hang until their timeout leaves
// the rest to the others. Before, organization A took all 8 and B's
// Acquire waited until one of A's calls ended.
func TestLimiter_OrgShareOfGlobalBucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{pluginLike}, LeaseTTL: time.Hour, ConcurrencyRetry: shareRetry})
	pa, pb := b.process(t), b.process(t)

	var leasesA []*flow.Lease
	for i := range 8 {
		g := acquire(t, pa, "plugin", "org_a", fmt.Sprintf("job:a%d", i))
		if i < 6 {
			require.True(t, g.Granted(), "A's call %d", i)
			leasesA = append(leasesA, g.Lease)
			continue
		}
		requireShareWait(t, g)
	}
	// From the other process too.
	requireShareWait(t, acquire(t, pb, "plugin", "org_a", "job:a8"))
	require.InDelta(t, 20-6, tokensLeft(t, pa.pool, "plugin"), 0.01, "a refused call takes no token")

	// A retried job of A keeps its slot rather than being refused.
	require.True(t, acquire(t, pb, "plugin", "org_a", "job:a0").Granted())

	// B gets the two slots A left, then the bucket is full.
	require.True(t, acquire(t, pb, "plugin", "org_b", "job:b0").Granted())
	b1 := acquire(t, pa, "plugin", "org_b", "job:b1")
	require.True(t, b1.Granted())
	requireShareWait(t, acquire(t, pb, "plugin", "org_b", "job:b2"))
	require.InDelta(t, 20-6-1-2, tokensLeft(t, pa.pool, "plugin"), 0.01)

	// A slot A releases is A's again (its share), one B releases anyone's.
	require.NoError(t, pa.Release(ctx, leasesA[1]))
	require.True(t, acquire(t, pa, "plugin", "org_a", "job:a6").Granted())
	require.NoError(t, pb.Release(ctx, b1.Lease))
	requireShareWait(t, acquire(t, pa, "plugin", "org_a", "job:a7"))
	require.True(t, acquire(t, pa, "plugin", "org_c", "job:c0").Granted())

	states, err := pa.States(ctx, "org_c")
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.Equal(t, 8, states[0].Leases)
}

// TestLimiter_OrgShareOnlyInGlobalBuckets: a bucket kept per organization
// is that organization's alone, every slot of it; and a share rounds down
// but is never less than one slot.
func TestLimiter_OrgShareOnlyInGlobalBuckets(t *testing.T) {
	t.Parallel()
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "own", Rate: 1, Interval: time.Hour, Burst: 20, MaxConcurrency: 8, Scope: flow.ScopeOrg},
		{Name: "three", Rate: 1, Interval: time.Hour, Burst: 20, MaxConcurrency: 3},
		{Name: "one", Rate: 1, Interval: time.Hour, Burst: 20, MaxConcurrency: 1},
	}, LeaseTTL: time.Hour, ConcurrencyRetry: shareRetry})
	p := b.process(t)
	for i := range 8 {
		require.True(t, acquire(t, p, "own", "org_a", fmt.Sprintf("job:%d", i)).Granted())
	}
	requireShareWait(t, acquire(t, p, "own", "org_a", "job:8"))

	require.True(t, acquire(t, p, "three", "org_a", "job:0").Granted())
	require.True(t, acquire(t, p, "three", "org_a", "job:1").Granted())
	requireShareWait(t, acquire(t, p, "three", "org_a", "job:2"))
	require.True(t, acquire(t, p, "three", "org_b", "job:3").Granted())

	require.True(t, acquire(t, p, "one", "org_a", "job:0").Granted(), "a share of less than one slot is one")
	requireShareWait(t, acquire(t, p, "one", "org_b", "job:1"))
}

// TestLimiter_OrgShareConfigured: MaxOrgShare 1 lets one organization (a
// deployment of one) take every slot of a global bucket.
func TestLimiter_OrgShareConfigured(t *testing.T) {
	t.Parallel()
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{pluginLike}, LeaseTTL: time.Hour, ConcurrencyRetry: shareRetry, MaxOrgShare: 1})
	p := b.process(t)
	for i := range 8 {
		require.True(t, acquire(t, p, "plugin", "org_a", fmt.Sprintf("job:%d", i)).Granted())
	}
	requireShareWait(t, acquire(t, p, "plugin", "org_a", "job:8"))
}

// TestLimiter_OrgShareInOneBatch: the Acquires of several organizations
// answered by one statement each keep to their organization's share; the
// place of a call refused for its organization's share goes to the next
// caller, of another organization.
func TestLimiter_OrgShareInOneBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{pluginLike}, LeaseTTL: time.Hour, ConcurrencyRetry: shareRetry})
	pcfg, err := pgxpool.ParseConfig(b.url)
	require.NoError(t, err)
	tracer := &holdingTracer{started: make(chan struct{}), release: make(chan struct{})}
	pcfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	limiter, err := flow.New(pool, b.cfg)
	require.NoError(t, err)
	ctx := context.Background()

	// A holds 4 of the 8 slots, so it may take 2 more.
	for i := range 4 {
		g, err := limiter.Acquire(ctx, "plugin", "org_a", fmt.Sprintf("job:a%d", i))
		require.NoError(t, err)
		require.True(t, g.Granted())
	}
	tracer.acquires.Store(0)
	tracer.armed.Store(true)

	grants := make(map[string]flow.Grant)
	var mu sync.Mutex
	var wg sync.WaitGroup
	take := func(org, holder string) {
		g, err := limiter.Acquire(ctx, "plugin", org, holder)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		grants[holder] = g
		mu.Unlock()
	}
	// B's first call runs alone (and takes the fifth slot); A's four and
	// then B's four queue behind it, in that order.
	wg.Go(func() { take("org_b", "job:b0") })
	<-tracer.started
	for i := range 4 {
		wg.Go(func() { take("org_a", fmt.Sprintf("job:a%d", 4+i)) })
		require.Eventually(t, func() bool { return limiter.Queued("plugin", "") == i+1 }, 5*time.Second, time.Millisecond)
	}
	for i := range 4 {
		wg.Go(func() { take("org_b", fmt.Sprintf("job:b%d", 1+i)) })
		require.Eventually(t, func() bool { return limiter.Queued("plugin", "") == 5+i }, 5*time.Second, time.Millisecond)
	}
	close(tracer.release)
	wg.Wait()
	require.Equal(t, int64(2), tracer.acquires.Load(), "one statement for the first, one for the 8 queued behind it")

	for _, h := range []string{"job:b0", "job:a4", "job:a5", "job:b1"} {
		require.True(t, grants[h].Granted(), h)
	}
	for _, h := range []string{"job:a6", "job:a7", "job:b2", "job:b3", "job:b4"} {
		requireShareWait(t, grants[h])
	}
	require.InDelta(t, 20-4-4, tokensLeft(t, pool, "plugin"), 0.01, "one token per grant")
}

// TestConfig_MaxOrgShare: three quarters by default; more than 0 and at
// most 1.
func TestConfig_MaxOrgShare(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 0.75, (&flow.Config{}).WithDefaults().MaxOrgShare, 0)
	for _, share := range []float64{-0.5, 1.5} {
		_, err := flow.New(nil, &flow.Config{MaxOrgShare: share})
		require.EqualError(t, err, "flow.max_org_share must be more than 0 and at most 1")
	}
	_, err := flow.New(nil, &flow.Config{MaxOrgShare: 1})
	require.NoError(t, err)
}
