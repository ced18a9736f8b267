package flow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/flow/flowstore"
	"github.com/outboxd/outboxd/internal/platform/batch"
)

// ErrUnknownBucket is returned for a bucket name that is not configured.
var ErrUnknownBucket = errors.New("unknown rate bucket")

// BucketConfig defines one bucket. It is the provider SPI's type
// (executors.BucketConfig), so that a provider declares its bucket without
// depending on the limiter.
type BucketConfig = executors.BucketConfig

// Scope says whom a bucket's tokens are shared by (executors.Scope).
type Scope = executors.Scope

// The scopes a bucket may have.
const (
	ScopeGlobal = executors.ScopeGlobal // one bucket for every organization
	ScopeOrg    = executors.ScopeOrg    // one bucket per organization
	ScopeSource = executors.ScopeSource // one per organization and source
)

// Config configures a Limiter.
type Config struct {
	// Buckets are the buckets Acquire and Drain accept.
	Buckets []BucketConfig
	// LeaseTTL is how long a concurrency lease lives when it is not
	// released, which is how the slots of a process that died come back.
	// It should exceed the longest a job holds a lease. Default 2m.
	LeaseTTL time.Duration
	// ConcurrencyRetry is the wait Acquire suggests when no concurrency slot
	// is free, jittered by ±20% so that waiters do not return together.
	// Default 1s.
	ConcurrencyRetry time.Duration
	// MaxOrgShare is the part of a global bucket's MaxConcurrency that one
	// organization's leases may hold at once, rounded down and at least
	// one slot, so that one organization whose calls hang (or are many)
	// leaves slots to the others. More than 0, at most 1 (no share: one
	// organization may take every slot). Default 0.75.
	MaxOrgShare float64
}

// WithDefaults returns a copy with unset fields defaulted.
func (c *Config) WithDefaults() *Config {
	buckets := make([]BucketConfig, len(c.Buckets))
	for i, b := range c.Buckets {
		b.Interval = cmp.Or(b.Interval, time.Second)
		b.Scope = cmp.Or(b.Scope, ScopeGlobal)
		buckets[i] = b
	}
	return &Config{
		Buckets:          buckets,
		LeaseTTL:         cmp.Or(c.LeaseTTL, 2*time.Minute),
		ConcurrencyRetry: cmp.Or(c.ConcurrencyRetry, time.Second),
		MaxOrgShare:      cmp.Or(c.MaxOrgShare, DefaultMaxOrgShare),
	}
}

// DefaultMaxOrgShare is Config.MaxOrgShare's default: three quarters, as
// for one organization's share of the workers and of the database pool.
const DefaultMaxOrgShare = 0.75

func (c *Config) validate() error {
	switch {
	case c.LeaseTTL <= 0:
		return errors.New("flow.lease_ttl must be positive")
	case c.ConcurrencyRetry <= 0:
		return errors.New("flow.concurrency_retry must be positive")
	case !(c.MaxOrgShare > 0 && c.MaxOrgShare <= 1):
		return errors.New("flow.max_org_share must be more than 0 and at most 1")
	}
	seen := make(map[string]bool, len(c.Buckets))
	for i, b := range c.Buckets {
		if b.Name == "" {
			return fmt.Errorf("flow.buckets[%d]: name is required", i)
		}
		if seen[b.Name] {
			return fmt.Errorf("flow bucket %q: defined twice", b.Name)
		}
		seen[b.Name] = true
		switch {
		case b.Rate <= 0:
			return fmt.Errorf("flow bucket %q: rate must be positive", b.Name)
		case b.Interval <= 0:
			return fmt.Errorf("flow bucket %q: interval must be positive", b.Name)
		case b.Burst < 1:
			return fmt.Errorf("flow bucket %q: burst must be at least 1", b.Name)
		case b.MaxConcurrency < 0:
			return fmt.Errorf("flow bucket %q: max_concurrency must not be negative", b.Name)
		case b.MaxConcurrency > math.MaxInt32:
			return fmt.Errorf("flow bucket %q: max_concurrency is too large", b.Name)
		case b.Scope != ScopeGlobal && b.Scope != ScopeOrg && b.Scope != ScopeSource:
			return fmt.Errorf("flow bucket %q: scope must be %q, %q or %q", b.Name, ScopeGlobal, ScopeOrg, ScopeSource)
		}
	}
	return nil
}

// Limiter hands out tokens and concurrency leases from buckets kept in
// Postgres. It is safe for concurrent use, and any number of Limiters in any
// number of processes may share a database.
type Limiter struct {
	store   *flowstore.Store
	cfg     *Config
	buckets map[string]*bucket
	locals  locals
}

// bucket is a configured bucket with its rate in tokens per second.
type bucket struct {
	BucketConfig
	perSecond float64
	// orgShare is how many of a global bucket's slots one organization
	// may hold; 0 when the share does not limit anyone.
	orgShare int
}

// orgShare is the slots of max that share (Config.MaxOrgShare) gives one
// organization: rounded down, at least one; 0 when that is all of them.
func orgShare(maxConcurrency int, share float64) int {
	// The epsilon keeps a product such as 0.7*10 from rounding down to 6.
	n := max(1, int(math.Floor(float64(maxConcurrency)*share+1e-9)))
	if n >= maxConcurrency {
		return 0
	}
	return n
}

// New returns a Limiter for the buckets in config.
func New(pool *pgxpool.Pool, config *Config) (*Limiter, error) {
	if config == nil {
		config = &Config{}
	}
	cfg := config.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	buckets := make(map[string]*bucket, len(cfg.Buckets))
	for _, b := range cfg.Buckets {
		bk := &bucket{BucketConfig: b, perSecond: float64(b.Rate) / b.Interval.Seconds()}
		if b.Scope == ScopeGlobal && b.MaxConcurrency > 0 {
			bk.orgShare = orgShare(b.MaxConcurrency, cfg.MaxOrgShare)
		}
		buckets[b.Name] = bk
	}
	return &Limiter{
		store:   flowstore.New(pool),
		cfg:     cfg,
		buckets: buckets,
		locals:  locals{m: map[localKey]*local{}},
	}, nil
}

// Bucket returns the configuration of the named bucket, defaults applied.
func (l *Limiter) Bucket(name string) (BucketConfig, bool) {
	b, ok := l.buckets[name]
	if !ok {
		return BucketConfig{}, false
	}
	return b.BucketConfig, true
}

// Accepts reports whether name may be given as a rate bucket: a
// configured one, or any name without flow control (a nil Limiter).
func (l *Limiter) Accepts(name string) bool {
	if l == nil {
		return true
	}
	_, ok := l.buckets[name]
	return ok
}

// Grant is the answer of Acquire.
type Grant struct {
	// Wait is zero when a token (and a slot) was taken. Otherwise nothing
	// was taken and the caller should come back after Wait.
	Wait time.Duration
	// Lease is the concurrency slot taken, for buckets with MaxConcurrency;
	// nil otherwise. Hand it to Release when the call is done.
	Lease *Lease
}

// Granted reports whether a token was taken.
func (g Grant) Granted() bool { return g.Wait == 0 }

// Lease is a held concurrency slot. Its fields identify it, so a lease can
// be rebuilt to release it from elsewhere.
type Lease struct {
	Bucket   string
	ScopeKey string
	Holder   string
}

// Acquire takes one token from the bucket, and one concurrency slot for
// holder when the bucket has MaxConcurrency, atomically in Postgres. org
// picks the bucket of an org-scoped bucket (its scope key, see
// BucketConfig.ScopeKey). For a global bucket it is the organization
// making the call, which holds at most its share of the bucket's slots
// (Config.MaxOrgShare); "" counts against the bucket only.
// holder identifies the job (for example "job:<id>"); it is required for a
// bucket with MaxConcurrency, and a holder that already holds a slot keeps
// it instead of taking a second one.
//
// When no token or slot is free, or org holds its share of the slots,
// Acquire takes nothing and returns a Grant with a positive Wait. Acquires of one bucket made at the same moment in
// this process share one statement, one round trip; none is made when this
// process already knows the bucket is empty (see the package
// documentation).
func (l *Limiter) Acquire(ctx context.Context, bucketName, org, holder string) (Grant, error) {
	b, key, err := l.resolve(bucketName, org)
	if err != nil {
		return Grant{}, err
	}
	if b.MaxConcurrency > 0 && holder == "" {
		return Grant{}, fmt.Errorf("flow bucket %q limits concurrency: a holder is required", b.Name)
	}
	loc := l.local(b, key)
	if wait := loc.wait(time.Now()); wait > 0 {
		return Grant{Wait: wait}, nil
	}
	t := taker{holder: holder}
	if b.orgShare > 0 {
		t.org = org
	}
	return loc.takes.Do(ctx, t)
}

// taker is one Acquire of a batch: the holder and, in a global bucket with
// an organization share, its organization.
type taker struct {
	holder, org string
}

// local returns the pre-check and the batch of Acquires of a bucket and
// scope key.
func (l *Limiter) local(b *bucket, key string) *local {
	return l.locals.get(b, key, func(loc *local) {
		loc.takes.Max = maxHolders
		loc.takes.Run = func(ctx context.Context, takers []taker) []batch.Result[Grant] {
			return l.take(ctx, b, key, loc, takers)
		}
	})
}

// maxHolders caps the holders served by one statement.
const maxHolders = 256

// take asks Postgres for a token (and a slot) for each taker, in one
// statement.
func (l *Limiter) take(ctx context.Context, b *bucket, key string, loc *local, takers []taker) []batch.Result[Grant] {
	holders := make([]string, len(takers))
	var orgs []string
	if b.orgShare > 0 {
		orgs = make([]string, len(takers))
	}
	for i, t := range takers {
		holders[i] = t.holder
		if orgs != nil {
			orgs[i] = t.org
		}
	}
	// sent is taken before the statement starts, so it is no later than the
	// database's now(): a wait measured from it ends no later than the real
	// one, and a token charged at it charges the local limiter no later than
	// Postgres charged the bucket.
	sent := time.Now()
	row, err := l.store.Acquire(ctx, flowstore.Take{
		Name:            b.Name,
		ScopeKey:        key,
		Burst:           float64(b.Burst),
		PerSecond:       b.perSecond,
		Holders:         holders,
		Orgs:            orgs,
		MaxConcurrency:  int32(b.MaxConcurrency),
		OrgShare:        int32(b.orgShare),
		LeaseTTLSeconds: l.cfg.LeaseTTL.Seconds(),
	})
	out := make([]batch.Result[Grant], len(holders))
	if err != nil {
		err = fmt.Errorf("acquiring from flow bucket %q: %w", b.Name, err)
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	granted := 0
	for _, g := range row.Granted {
		if g {
			granted++
		}
	}
	loc.took(sent, granted)
	var tokenWait time.Duration
	if granted < len(holders) && row.TokenWaitSeconds > 0 {
		tokenWait = fromSeconds(row.TokenWaitSeconds)
		loc.block(sent.Add(tokenWait))
	}
	refused := 0 // for want of a token or a slot, so far
	for i, holder := range holders {
		switch {
		case row.Granted[i]:
			if b.MaxConcurrency > 0 {
				out[i].Value.Lease = &Lease{Bucket: b.Name, ScopeKey: key, Holder: holder}
			}
		case row.OverShare[i]: // as for a full bucket: a slot may come free
			out[i].Value.Wait = jitter(l.cfg.ConcurrencyRetry)
		case tokenWait > 0:
			// The refused come back one token's refill apart, in order,
			// rather than all at the moment the next single token is free.
			out[i].Value.Wait = tokenWait + time.Duration(float64(refused)/b.perSecond*float64(time.Second))
			refused++
		default: // a token is free, a slot is not
			out[i].Value.Wait = jitter(l.cfg.ConcurrencyRetry)
		}
	}
	return out
}

// Release frees a lease's concurrency slot before it expires. A nil lease
// and a lease that expired or was released already are fine.
func (l *Limiter) Release(ctx context.Context, lease *Lease) error {
	if lease == nil {
		return nil
	}
	if err := l.store.Release(ctx, lease.Bucket, lease.ScopeKey, lease.Holder); err != nil {
		return fmt.Errorf("releasing flow lease of %q: %w", lease.Holder, err)
	}
	return nil
}

// Refund gives back a token taken from the bucket (Acquire with the same
// bucketName and org) for a call that was not made, such as a job a gate
// held or skipped after it took its token. The bucket never holds more
// than Burst. A concurrency slot is freed by Release, as after a call.
func (l *Limiter) Refund(ctx context.Context, bucketName, org string) error {
	b, key, err := l.resolve(bucketName, org)
	if err != nil {
		return err
	}
	if err := l.store.Refund(ctx, b.Name, key, float64(b.Burst)); err != nil {
		return fmt.Errorf("refunding flow bucket %q: %w", b.Name, err)
	}
	// This process's pre-check was charged for the token: forgetting it
	// (always safe) lets the next Acquire ask Postgres, which has it back.
	l.locals.forget(b.Name, key)
	return nil
}

// Drain empties the bucket and blocks it until d from now, for example for
// a provider's 429 with Retry-After. A block that already ends later is kept.
// Every process's Acquire of the bucket then waits, and tokens refill during
// the block as usual.
func (l *Limiter) Drain(ctx context.Context, bucketName, org string, d time.Duration) error {
	b, key, err := l.resolve(bucketName, org)
	if err != nil {
		return err
	}
	d = max(d, 0)
	sent := time.Now()
	if err := l.store.Drain(ctx, b.Name, key, d.Seconds()); err != nil {
		return fmt.Errorf("draining flow bucket %q: %w", b.Name, err)
	}
	l.local(b, key).block(sent.Add(d))
	return nil
}

// resolve finds the bucket and its scope key: "" for a global bucket, the
// given key (see BucketConfig.ScopeKey) otherwise.
func (l *Limiter) resolve(name, org string) (*bucket, string, error) {
	b, ok := l.buckets[name]
	if !ok {
		return nil, "", fmt.Errorf("%w: %q", ErrUnknownBucket, name)
	}
	if b.Scope == ScopeGlobal {
		return b, "", nil
	}
	if org == "" {
		return nil, "", fmt.Errorf("flow bucket %q is kept per organization: an organization is required", name)
	}
	return b, org, nil
}

// fromSeconds converts a positive wait from Postgres, rounding up so that
// it never comes out as zero.
func fromSeconds(s float64) time.Duration {
	const most = float64(math.MaxInt64 / 2)
	return max(time.Duration(min(math.Ceil(s*float64(time.Second)), most)), 1)
}

// jitter spreads d by ±20%.
func jitter(d time.Duration) time.Duration {
	return max(d+time.Duration((rand.Float64()*0.4-0.2)*float64(d)), 1)
}

// Buckets returns the configured buckets, defaults applied, by name.
func (l *Limiter) Buckets() []BucketConfig {
	out := make([]BucketConfig, 0, len(l.buckets))
	for _, b := range l.buckets {
		out = append(out, b.BucketConfig)
	}
	slices.SortFunc(out, func(a, b BucketConfig) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// State is one bucket row as an organization's calls see it now.
type State struct {
	Bucket string
	// Source is the source of a per-source bucket's row, "" otherwise.
	Source string
	// Tokens is the current level, refilled up to the database's clock;
	// at most the bucket's Burst.
	Tokens float64
	// BlockedUntil is the end of a drain (a provider's Retry-After), nil
	// when the bucket is not blocked now.
	BlockedUntil *time.Time
	// Leases is how many concurrency slots are held now, by any process
	// (for a global bucket, by any organization's jobs).
	Leases int
}

// States reads the rows of the buckets org's calls use: the global ones,
// org's own, and one per source for per-source buckets. A bucket that has
// never been used has no row: it is full and holds no lease. One query.
func (l *Limiter) States(ctx context.Context, org string) ([]State, error) {
	rows, err := l.store.States(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("reading flow buckets: %w", err)
	}
	var out []State
	for _, r := range rows {
		b, ok := l.buckets[r.Name]
		if !ok {
			continue // a bucket no longer configured
		}
		var source string
		switch b.Scope {
		case ScopeGlobal:
			if r.ScopeKey != "" {
				continue
			}
		case ScopeOrg:
			if r.ScopeKey != org {
				continue
			}
		case ScopeSource:
			rest, found := strings.CutPrefix(r.ScopeKey, org+"/")
			if !found || rest == "" || strings.Contains(rest, "/") {
				continue // another organization's (one whose id has a slash)
			}
			source = rest
		}
		s := State{Bucket: b.Name, Source: source, Leases: r.ActiveLeases}
		elapsed := max(r.ReadAt.Sub(r.RefilledAt).Seconds(), 0)
		s.Tokens = min(float64(b.Burst), r.Tokens+elapsed*b.perSecond)
		if r.BlockedUntil != nil && r.BlockedUntil.After(r.ReadAt) {
			s.BlockedUntil = r.BlockedUntil
		}
		out = append(out, s)
	}
	return out, nil
}
