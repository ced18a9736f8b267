package flow_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// queryCounter counts the statements a pool sends, each one round trip.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// process stands for one worker process: its own pool and Limiter on the
// shared database.
type process struct {
	*flow.Limiter
	pool    *pgxpool.Pool
	queries *queryCounter
}

type testBundle struct {
	url string
	cfg *flow.Config
}

func setup(t testing.TB, cfg *flow.Config) *testBundle {
	t.Helper()
	return &testBundle{url: pgtest.URL(t), cfg: cfg}
}

// process starts another process on the bundle's database.
func (b *testBundle) process(t testing.TB) *process {
	t.Helper()
	pcfg, err := pgxpool.ParseConfig(b.url)
	require.NoError(t, err)
	counter := &queryCounter{}
	pcfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	limiter, err := flow.New(pool, b.cfg)
	require.NoError(t, err)
	return &process{Limiter: limiter, pool: pool, queries: counter}
}

func acquire(t testing.TB, p *process, bucket, org, holder string) flow.Grant {
	t.Helper()
	g, err := p.Acquire(context.Background(), bucket, org, holder)
	require.NoError(t, err)
	return g
}

func TestConfig(t *testing.T) {
	t.Parallel()

	t.Run("WithDefaults", func(t *testing.T) {
		t.Parallel()
		cfg := (&flow.Config{Buckets: []flow.BucketConfig{{Name: "a", Rate: 1, Burst: 1}}}).WithDefaults()
		require.Equal(t, 2*time.Minute, cfg.LeaseTTL)
		require.Equal(t, time.Second, cfg.ConcurrencyRetry)
		require.Equal(t, time.Second, cfg.Buckets[0].Interval)
		require.Equal(t, flow.ScopeGlobal, cfg.Buckets[0].Scope)

		limiter, err := flow.New(nil, &flow.Config{Buckets: []flow.BucketConfig{
			{Name: "slack.minute", Rate: 60, Interval: time.Minute, Burst: 10, Scope: flow.ScopeOrg},
		}})
		require.NoError(t, err)
		b, ok := limiter.Bucket("slack.minute")
		require.True(t, ok)
		require.Equal(t, flow.BucketConfig{Name: "slack.minute", Rate: 60, Interval: time.Minute, Burst: 10, Scope: flow.ScopeOrg}, b)
		_, ok = limiter.Bucket("nope")
		require.False(t, ok)
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		for name, tc := range map[string]struct {
			buckets []flow.BucketConfig
			want    string
		}{
			"NoName":     {[]flow.BucketConfig{{Rate: 1, Burst: 1}}, "name is required"},
			"Duplicate":  {[]flow.BucketConfig{{Name: "a", Rate: 1, Burst: 1}, {Name: "a", Rate: 2, Burst: 2}}, "defined twice"},
			"ZeroRate":   {[]flow.BucketConfig{{Name: "a", Burst: 1}}, "rate must be positive"},
			"ZeroBurst":  {[]flow.BucketConfig{{Name: "a", Rate: 1}}, "burst must be at least 1"},
			"NegInterv":  {[]flow.BucketConfig{{Name: "a", Rate: 1, Burst: 1, Interval: -time.Second}}, "interval must be positive"},
			"NegConc":    {[]flow.BucketConfig{{Name: "a", Rate: 1, Burst: 1, MaxConcurrency: -1}}, "max_concurrency"},
			"BadScope":   {[]flow.BucketConfig{{Name: "a", Rate: 1, Burst: 1, Scope: "user"}}, "scope must be"},
			"ValidEmpty": {nil, ""},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				_, err := flow.New(nil, &flow.Config{Buckets: tc.buckets})
				if tc.want == "" {
					require.NoError(t, err)
					return
				}
				require.ErrorContains(t, err, tc.want)
			})
		}
		_, err := flow.New(nil, &flow.Config{LeaseTTL: -time.Second})
		require.ErrorContains(t, err, "lease_ttl")
	})
}

func TestLimiter_BurstThenRate(t *testing.T) {
	t.Parallel()
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{{Name: "api", Rate: 10, Interval: time.Second, Burst: 5}}})
	p := b.process(t)

	start := time.Now()
	for i := range 5 {
		require.True(t, acquire(t, p, "api", "", "").Granted(), "burst token %d", i)
	}
	// The sixth token needs 100ms of refill after the first was taken. A
	// wait may come from this process's limiter, whose clock started a
	// little earlier than the row's, so it can end a little too soon: the
	// caller then simply gets another wait.
	waits := 0
	for {
		g := acquire(t, p, "api", "", "")
		if g.Granted() {
			break
		}
		waits++
		require.Nil(t, g.Lease)
		require.Positive(t, g.Wait)
		require.LessOrEqual(t, g.Wait, 101*time.Millisecond, "one token refills in 100ms")
		time.Sleep(g.Wait)
	}
	require.Positive(t, waits, "the bucket was empty after the burst")
	require.LessOrEqual(t, waits, 3, "each wait ends about when the next token comes")
	require.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond, "6 tokens take at least 100ms")

	// The seventh token comes no sooner than 200ms after the first was
	// taken, however late this request is (a loaded machine may have
	// slept well past the sixth): a wait, if any, ends no earlier than
	// that. The 20ms allow for the process's clock against the row's.
	g := acquire(t, p, "api", "", "")
	elapsed := time.Since(start)
	if g.Granted() {
		require.GreaterOrEqual(t, elapsed, 180*time.Millisecond, "7 tokens take at least 200ms")
	} else {
		require.GreaterOrEqual(t, elapsed+g.Wait, 180*time.Millisecond, "the seventh token comes 200ms after the first")
	}
}

// TestLimiter_ManyProcesses hammers one bucket from two processes with
// several goroutines each, counting grants over a measured window.
func TestLimiter_ManyProcesses(t *testing.T) {
	t.Parallel()
	const (
		rate     = 50
		burst    = 10
		duration = 2 * time.Second
	)
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{{Name: "hot", Rate: rate, Burst: burst}}})
	procs := []*process{b.process(t), b.process(t)}

	var granted, denied atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(duration)
	for _, p := range procs {
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					g, err := p.Acquire(context.Background(), "hot", "", "")
					if err != nil {
						t.Error(err)
						return
					}
					if g.Granted() {
						granted.Add(1)
						continue
					}
					denied.Add(1)
					time.Sleep(min(g.Wait, time.Until(deadline)))
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	most := burst + rate*elapsed.Seconds() + 1
	got := float64(granted.Load())
	queries := procs[0].queries.n.Load() + procs[1].queries.n.Load()
	t.Logf("granted %.0f of at most %.1f in %v; %d refusals, %d statements", got, most, elapsed, denied.Load(), queries)
	require.LessOrEqual(t, got, most, "never more than burst + rate × elapsed")
	require.GreaterOrEqual(t, got, 0.8*most, "at least 80%% of what the bucket allows")
}

// TestLimiter_ExactUnderContention empties a bucket that hardly refills from
// two processes at once: a lost update would grant more than its burst.
func TestLimiter_ExactUnderContention(t *testing.T) {
	t.Parallel()
	const burst = 50
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{{Name: "once", Rate: 1, Interval: time.Hour, Burst: burst}}})
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		p := b.process(t)
		for range 8 {
			wg.Go(func() {
				for range 20 {
					g, err := p.Acquire(context.Background(), "once", "", "")
					if err != nil {
						t.Error(err)
						return
					}
					if g.Granted() {
						granted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	require.Equal(t, int64(burst), granted.Load())
}

func TestLimiter_Scope(t *testing.T) {
	t.Parallel()
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "per_org", Rate: 1, Interval: time.Hour, Burst: 2, Scope: flow.ScopeOrg},
		{Name: "shared", Rate: 1, Interval: time.Hour, Burst: 2},
	}})
	p := b.process(t)

	t.Run("OrgIsolatesOrgs", func(t *testing.T) {
		require.True(t, acquire(t, p, "per_org", "org_a", "").Granted())
		require.True(t, acquire(t, p, "per_org", "org_a", "").Granted())
		require.False(t, acquire(t, p, "per_org", "org_a", "").Granted())
		require.True(t, acquire(t, p, "per_org", "org_b", "").Granted(), "org_b has its own bucket")
		require.True(t, acquire(t, p, "per_org", "org_b", "").Granted())
		require.False(t, acquire(t, p, "per_org", "org_b", "").Granted())
	})

	t.Run("GlobalShares", func(t *testing.T) {
		require.True(t, acquire(t, p, "shared", "org_a", "").Granted())
		require.True(t, acquire(t, p, "shared", "org_b", "").Granted())
		g := acquire(t, b.process(t), "shared", "org_c", "")
		require.False(t, g.Granted(), "every org draws from one bucket")
		require.Greater(t, g.Wait, 59*time.Minute)
	})

	t.Run("OrgRequired", func(t *testing.T) {
		_, err := p.Acquire(context.Background(), "per_org", "", "")
		require.ErrorContains(t, err, "organization is required")
	})

	t.Run("UnknownBucket", func(t *testing.T) {
		_, err := p.Acquire(context.Background(), "nope", "org_a", "")
		require.ErrorIs(t, err, flow.ErrUnknownBucket)
		require.ErrorIs(t, p.Drain(context.Background(), "nope", "org_a", time.Second), flow.ErrUnknownBucket)
	})
}

func TestLimiter_MaxConcurrency(t *testing.T) {
	t.Parallel()
	const retry = 100 * time.Millisecond
	setupConc := func(t *testing.T, ttl time.Duration) *testBundle {
		return setup(t, &flow.Config{
			Buckets:          []flow.BucketConfig{{Name: "conc", Rate: 100000, Burst: 100000, MaxConcurrency: 2}},
			LeaseTTL:         ttl,
			ConcurrencyRetry: retry,
		})
	}
	requireSlotWait := func(t *testing.T, g flow.Grant) {
		t.Helper()
		require.False(t, g.Granted())
		require.Nil(t, g.Lease)
		require.InDelta(t, retry, g.Wait, float64(retry)/5+1, "ConcurrencyRetry jittered by ±20%")
	}

	t.Run("ThirdWaitsAndReleaseFreesSlot", func(t *testing.T) {
		t.Parallel()
		p := setupConc(t, time.Minute).process(t)
		a := acquire(t, p, "conc", "", "job:a")
		require.True(t, a.Granted())
		require.Equal(t, &flow.Lease{Bucket: "conc", Holder: "job:a"}, a.Lease)
		require.True(t, acquire(t, p, "conc", "", "job:b").Granted())
		requireSlotWait(t, acquire(t, p, "conc", "", "job:c"))
		requireSlotWait(t, acquire(t, p, "conc", "", "job:c"))

		require.NoError(t, p.Release(context.Background(), a.Lease))
		require.NoError(t, p.Release(context.Background(), a.Lease), "releasing twice is fine")
		require.NoError(t, p.Release(context.Background(), nil))
		c := acquire(t, p, "conc", "", "job:c")
		require.True(t, c.Granted(), "the released slot is free")
		requireSlotWait(t, acquire(t, p, "conc", "", "job:d"))
	})

	t.Run("LeaseOfDeadProcessExpires", func(t *testing.T) {
		t.Parallel()
		b := setupConc(t, 300*time.Millisecond)
		dead, alive := b.process(t), b.process(t)
		require.True(t, acquire(t, dead, "conc", "", "job:a").Granted())
		require.True(t, acquire(t, dead, "conc", "", "job:b").Granted())
		dead.pool.Close()

		requireSlotWait(t, acquire(t, alive, "conc", "", "job:c"))
		require.Eventually(t, func() bool {
			return acquire(t, alive, "conc", "", "job:c").Granted()
		}, 5*time.Second, 50*time.Millisecond, "the dead process's first lease expires")
		// The second was taken a moment after the first (longer on a busy
		// machine), so it may expire a moment later.
		require.Eventually(t, func() bool {
			return acquire(t, alive, "conc", "", "job:d").Granted()
		}, 5*time.Second, 50*time.Millisecond, "the dead process's second lease expires")
		requireSlotWait(t, acquire(t, alive, "conc", "", "job:e"))
	})

	t.Run("SameHolderKeepsItsSlot", func(t *testing.T) {
		t.Parallel()
		b := setupConc(t, time.Minute)
		p, other := b.process(t), b.process(t)
		require.True(t, acquire(t, p, "conc", "", "job:a").Granted())
		require.True(t, acquire(t, other, "conc", "", "job:a").Granted(), "a retried job reuses its lease")
		require.True(t, acquire(t, p, "conc", "", "job:b").Granted())
		requireSlotWait(t, acquire(t, p, "conc", "", "job:c"))
		require.True(t, acquire(t, other, "conc", "", "job:b").Granted(), "with both slots taken")
	})

	t.Run("HolderRequired", func(t *testing.T) {
		t.Parallel()
		_, err := setupConc(t, time.Minute).process(t).Acquire(context.Background(), "conc", "", "")
		require.ErrorContains(t, err, "holder is required")
	})

	t.Run("NeverExceededAcrossProcesses", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &flow.Config{
			Buckets:          []flow.BucketConfig{{Name: "conc", Rate: 100000, Burst: 100000, MaxConcurrency: 3}},
			ConcurrencyRetry: 5 * time.Millisecond,
		})
		procs := []*process{b.process(t), b.process(t)}
		var inFlight, peak, granted atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(time.Second)
		for i, p := range procs {
			for j := range 6 {
				holder := fmt.Sprintf("job:%d-%d", i, j)
				wg.Go(func() {
					for time.Now().Before(deadline) {
						g, err := p.Acquire(context.Background(), "conc", "", holder)
						if err != nil {
							t.Error(err)
							return
						}
						if !g.Granted() {
							time.Sleep(g.Wait)
							continue
						}
						granted.Add(1)
						n := inFlight.Add(1)
						for cur := peak.Load(); n > cur && !peak.CompareAndSwap(cur, n); cur = peak.Load() {
						}
						time.Sleep(2 * time.Millisecond)
						inFlight.Add(-1)
						if err := p.Release(context.Background(), g.Lease); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		t.Logf("%d leases granted, peak %d in flight", granted.Load(), peak.Load())
		require.LessOrEqual(t, peak.Load(), int64(3))
		require.Equal(t, int64(3), peak.Load(), "the limit was reached")
	})
}

func TestLimiter_Drain(t *testing.T) {
	t.Parallel()
	cfg := &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "api", Rate: 1000, Burst: 10},
		{Name: "per_org", Rate: 1000, Burst: 10, Scope: flow.ScopeOrg},
	}}

	t.Run("BlocksEveryProcess", func(t *testing.T) {
		t.Parallel()
		b := setup(t, cfg)
		a, other := b.process(t), b.process(t)
		require.True(t, acquire(t, other, "api", "", "").Granted())

		start := time.Now()
		require.NoError(t, a.Drain(context.Background(), "api", "", time.Second))
		// The wait is what is left of the drain: at most the second, at
		// least what this clock says is left of it (however slow the
		// machine was in between), give or take the clocks' 50 ms.
		requireDrainWait := func(g flow.Grant, msg string) {
			t.Helper()
			require.False(t, g.Granted(), msg)
			require.LessOrEqual(t, g.Wait, time.Second+50*time.Millisecond, msg)
			require.GreaterOrEqual(t, g.Wait, time.Second-time.Since(start)-50*time.Millisecond, msg)
		}
		requireDrainWait(acquire(t, a, "api", "", ""), "the draining process waits")
		requireDrainWait(acquire(t, other, "api", "", ""), "the other process waits too")

		require.NoError(t, other.Drain(context.Background(), "api", "", 10*time.Millisecond))
		g := acquire(t, b.process(t), "api", "", "")
		requireDrainWait(g, "a shorter drain does not shorten the block")

		time.Sleep(g.Wait)
		for i := range 10 {
			require.True(t, acquire(t, b.process(t), "api", "", "").Granted(), "tokens refilled during the block: %d", i)
		}
	})

	t.Run("UnusedBucket", func(t *testing.T) {
		t.Parallel()
		b := setup(t, cfg)
		require.NoError(t, b.process(t).Drain(context.Background(), "api", "", time.Minute))
		g := acquire(t, b.process(t), "api", "", "")
		require.Greater(t, g.Wait, 50*time.Second)
	})

	t.Run("PerOrg", func(t *testing.T) {
		t.Parallel()
		b := setup(t, cfg)
		p := b.process(t)
		require.NoError(t, p.Drain(context.Background(), "per_org", "org_a", time.Minute))
		require.False(t, acquire(t, b.process(t), "per_org", "org_a", "").Granted())
		require.True(t, acquire(t, b.process(t), "per_org", "org_b", "").Granted())
	})
}

// TestLimiter_LocalPreCheck counts statements while a bucket is empty: a
// process that knows it is empty answers without Postgres.
func TestLimiter_LocalPreCheck(t *testing.T) {
	t.Parallel()
	b := setup(t, &flow.Config{
		Buckets: []flow.BucketConfig{
			{Name: "slow", Rate: 1, Interval: time.Hour, Burst: 3},
			{Name: "conc", Rate: 100000, Burst: 100000, MaxConcurrency: 1},
		},
	})

	t.Run("OwnTokensSpent", func(t *testing.T) {
		p := b.process(t)
		for range 3 {
			require.True(t, acquire(t, p, "slow", "", "").Granted())
		}
		require.Equal(t, int64(3+2), p.queries.n.Load(), "the first Acquire creates the row: 3 statements, then 1 each")

		before := p.queries.n.Load()
		for range 100 {
			g := acquire(t, p, "slow", "", "")
			require.False(t, g.Granted())
			require.Greater(t, g.Wait, 59*time.Minute)
		}
		require.Equal(t, before, p.queries.n.Load(), "this process's limiter is empty: no round trip")
	})

	t.Run("LearnedFromPostgres", func(t *testing.T) {
		p := b.process(t)
		g := acquire(t, p, "slow", "", "")
		require.False(t, g.Granted())
		require.Greater(t, g.Wait, 59*time.Minute)
		require.Equal(t, int64(1), p.queries.n.Load())
		for range 100 {
			require.False(t, acquire(t, p, "slow", "", "").Granted())
		}
		require.Equal(t, int64(1), p.queries.n.Load(), "the wait Postgres returned is remembered")
	})

	t.Run("AfterOwnDrain", func(t *testing.T) {
		p := b.process(t)
		require.NoError(t, p.Drain(context.Background(), "conc", "", time.Minute))
		for range 100 {
			require.False(t, acquire(t, p, "conc", "", "job:a").Granted())
		}
		require.Equal(t, int64(1), p.queries.n.Load(), "only the drain")
	})

	t.Run("SlotWaitsAreNotRemembered", func(t *testing.T) {
		b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{{Name: "conc", Rate: 100000, Burst: 100000, MaxConcurrency: 1}}})
		p := b.process(t)
		require.True(t, acquire(t, p, "conc", "", "job:a").Granted())
		before := p.queries.n.Load()
		for range 5 {
			require.False(t, acquire(t, p, "conc", "", "job:b").Granted())
		}
		require.Equal(t, before+5, p.queries.n.Load(), "a Release elsewhere may free the slot at any time")
	})
}

// Refund gives a token taken for a call not made back, in Postgres and
// to this process's pre-check (the next Acquire gets it at once), and
// never raises the bucket above its burst.
func TestLimiter_Refund(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "hourly", Rate: 1, Interval: time.Hour, Burst: 2, Scope: flow.ScopeOrg},
	}})
	p := b.process(t)
	require.True(t, acquire(t, p, "hourly", "org-1", "").Granted())
	require.True(t, acquire(t, p, "hourly", "org-1", "").Granted())
	require.False(t, acquire(t, p, "hourly", "org-1", "").Granted())

	require.NoError(t, p.Refund(ctx, "hourly", "org-1"))
	require.True(t, acquire(t, p, "hourly", "org-1", "").Granted(), "the refunded token")
	require.False(t, acquire(t, p, "hourly", "org-1", "").Granted())

	// Refunds beyond what was taken stop at the burst.
	for range 5 {
		require.NoError(t, p.Refund(ctx, "hourly", "org-1"))
	}
	require.True(t, acquire(t, p, "hourly", "org-1", "").Granted())
	require.True(t, acquire(t, p, "hourly", "org-1", "").Granted())
	require.False(t, acquire(t, p, "hourly", "org-1", "").Granted())
	require.ErrorIs(t, p.Refund(ctx, "nope", "org-1"), flow.ErrUnknownBucket)
}

func BenchmarkAcquire(b *testing.B) {
	bundle := setup(b, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "huge", Rate: 1_000_000_000, Burst: 1_000_000_000},
		{Name: "conc", Rate: 1_000_000_000, Burst: 1_000_000_000, MaxConcurrency: 1_000_000},
		{Name: "empty", Rate: 1, Interval: time.Hour, Burst: 1},
	}})
	p := bundle.process(b)
	ctx := context.Background()

	b.Run("Rate", func(b *testing.B) {
		acquire(b, p, "huge", "", "") // create the row and prepare the statement
		before := p.queries.n.Load()
		for b.Loop() {
			if g, err := p.Acquire(ctx, "huge", "", ""); err != nil || !g.Granted() {
				b.Fatal(g, err)
			}
		}
		b.ReportMetric(float64(p.queries.n.Load()-before)/float64(b.N), "roundtrips/op")
	})

	b.Run("ConcurrencyWithRelease", func(b *testing.B) {
		acquire(b, p, "conc", "", "warm")
		before := p.queries.n.Load()
		for b.Loop() {
			g, err := p.Acquire(ctx, "conc", "", "job:1")
			if err != nil || !g.Granted() {
				b.Fatal(g, err)
			}
			if err := p.Release(ctx, g.Lease); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(p.queries.n.Load()-before)/float64(b.N), "roundtrips/op")
	})

	b.Run("EmptyBucket", func(b *testing.B) {
		acquire(b, p, "empty", "", "")
		before := p.queries.n.Load()
		for b.Loop() {
			if g, err := p.Acquire(ctx, "empty", "", ""); err != nil || g.Granted() {
				b.Fatal(g, err)
			}
		}
		b.ReportMetric(float64(p.queries.n.Load()-before)/float64(b.N), "roundtrips/op")
	})
}

func BenchmarkAcquireParallel(b *testing.B) {
	bundle := setup(b, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "huge", Rate: 1_000_000_000, Burst: 1_000_000_000},
		{Name: "per_org", Rate: 1_000_000_000, Burst: 1_000_000_000, Scope: flow.ScopeOrg},
	}})
	p := bundle.process(b)
	ctx := context.Background()

	b.Run("OneBucket", func(b *testing.B) {
		acquire(b, p, "huge", "", "")
		before := p.queries.n.Load()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if g, err := p.Acquire(ctx, "huge", "", ""); err != nil || !g.Granted() {
					b.Error(g, err)
					return
				}
			}
		})
		b.ReportMetric(float64(p.queries.n.Load()-before)/float64(b.N), "roundtrips/op")
	})

	b.Run("BucketPerOrg", func(b *testing.B) {
		var next atomic.Int64
		before := p.queries.n.Load()
		b.RunParallel(func(pb *testing.PB) {
			org := fmt.Sprintf("org_%d", next.Add(1))
			for pb.Next() {
				if g, err := p.Acquire(ctx, "per_org", org, ""); err != nil || !g.Granted() {
					b.Error(g, err)
					return
				}
			}
		})
		b.ReportMetric(float64(p.queries.n.Load()-before)/float64(b.N), "roundtrips/op")
	})
}

// holdingTracer counts FlowAcquire statements and, while armed, holds the
// first one until released.
type holdingTracer struct {
	armed    atomic.Bool
	started  chan struct{}
	release  chan struct{}
	acquires atomic.Int64
}

func (h *holdingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "name: FlowAcquire ") {
		return ctx
	}
	h.acquires.Add(1)
	if h.armed.CompareAndSwap(true, false) {
		close(h.started)
		<-h.release
	}
	return ctx
}

func (h *holdingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestLimiter_BatchesConcurrentAcquires: the Acquires that arrive while one
// is at Postgres are answered by one statement, which grants tokens and
// slots to a prefix of them, exactly as many as are free, and refuses the
// rest.
func TestLimiter_BatchesConcurrentAcquires(t *testing.T) {
	t.Parallel()
	b := setup(t, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "conc", Rate: 1, Interval: time.Hour, Burst: 30, MaxConcurrency: 20},
	}})
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

	// Create the bucket row, then give the token's slot back.
	warm, err := limiter.Acquire(ctx, "conc", "", "warm")
	require.NoError(t, err)
	require.NoError(t, limiter.Release(ctx, warm.Lease))
	tracer.acquires.Store(0)
	tracer.armed.Store(true)

	const waiting = 40
	grants := make(chan flow.Grant, waiting+1)
	var wg sync.WaitGroup
	take := func(holder string) {
		g, err := limiter.Acquire(ctx, "conc", "", holder)
		if err != nil {
			t.Error(err)
		}
		grants <- g
	}
	wg.Go(func() { take("first") })
	<-tracer.started
	for i := range waiting {
		wg.Go(func() { take(fmt.Sprintf("job:%d", i)) })
	}
	require.Eventually(t, func() bool { return limiter.Queued("conc", "") == waiting }, 5*time.Second, time.Millisecond)
	close(tracer.release)
	wg.Wait()
	close(grants)

	require.Equal(t, int64(2), tracer.acquires.Load(), "one statement for the first, one for the 40 queued behind it")
	var granted, refused int
	holders := map[string]bool{}
	for g := range grants {
		if g.Granted() {
			granted++
			require.NotNil(t, g.Lease)
			holders[g.Lease.Holder] = true
		} else {
			refused++
			require.Positive(t, g.Wait)
		}
	}
	require.Equal(t, 20, granted, "as many as the bucket has slots (29 tokens were left)")
	require.Len(t, holders, 20)
	require.Equal(t, waiting+1-20, refused)
	var leases int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM flow_buckets, jsonb_object_keys(leases) WHERE name = 'conc'`).Scan(&leases))
	require.Equal(t, 20, leases)
	var tokens float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT tokens FROM flow_buckets WHERE name = 'conc'`).Scan(&tokens))
	require.InDelta(t, 30-1-20, tokens, 0.1, "warm-up, then one token per grant")
}
