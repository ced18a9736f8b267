package flow

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/outboxd/outboxd/internal/platform/batch"
)

// locals holds what this process knows about each bucket and scope key.
// Forgetting an entry is always safe: a new one starts full and unblocked,
// the most permissive state, and only costs round trips.
type locals struct {
	mu sync.Mutex
	m  map[localKey]*local
	// sweepAt is the size at which idle entries are next dropped, so that
	// org-scoped buckets of many organizations do not grow the map forever.
	sweepAt int
}

type localKey struct {
	bucket, scopeKey string
}

// local is the pre-check of one bucket and scope key.
type local struct {
	// limiter is charged for every token Postgres granted this process. It
	// has the bucket's rate and burst, so it never holds fewer tokens than
	// the shared bucket.
	limiter *rate.Limiter
	burst   float64

	mu sync.Mutex
	// blockedUntil is when the wait Postgres last returned for a token (or
	// a Drain from this process) ends.
	blockedUntil time.Time

	// takes batches the Acquires of the bucket and scope key that are made
	// at the same moment into one statement.
	takes batch.Group[taker, Grant]
}

// minSweep is the map size below which no sweep runs.
const minSweep = 1024

// get returns the entry of a bucket and scope key, creating it, and passing
// it to init, when there is none.
func (ls *locals) get(b *bucket, scopeKey string, init func(*local)) *local {
	k := localKey{b.Name, scopeKey}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if loc, ok := ls.m[k]; ok {
		return loc
	}
	if len(ls.m) >= max(ls.sweepAt, minSweep) {
		now := time.Now()
		for k, loc := range ls.m {
			if loc.idle(now) {
				delete(ls.m, k)
			}
		}
		ls.sweepAt = 2 * len(ls.m)
	}
	loc := &local{limiter: rate.NewLimiter(rate.Limit(b.perSecond), b.Burst), burst: float64(b.Burst)}
	init(loc)
	ls.m[k] = loc
	return loc
}

// forget drops the entry of a bucket and scope key; the next get starts a
// new one, full and unblocked.
func (ls *locals) forget(bucket, scopeKey string) {
	ls.mu.Lock()
	delete(ls.m, localKey{bucket, scopeKey})
	ls.mu.Unlock()
}

// wait returns how long the shared bucket certainly has no token for, 0
// when it may have one.
func (loc *local) wait(now time.Time) time.Duration {
	loc.mu.Lock()
	blocked := loc.blockedUntil.Sub(now)
	loc.mu.Unlock()
	var refill time.Duration
	if tokens := loc.limiter.TokensAt(now); tokens < 1 {
		refill = time.Duration((1 - tokens) / float64(loc.limiter.Limit()) * float64(time.Second))
	}
	return max(blocked, refill, 0)
}

// took charges the limiter for n tokens Postgres granted. ReserveN always
// succeeds, so the limiter is charged even when goroutines raced past the
// check; that only errs towards refusing.
func (loc *local) took(at time.Time, n int) {
	if n > 0 {
		loc.limiter.ReserveN(at, n)
	}
}

// block records that the shared bucket has no token until t.
func (loc *local) block(t time.Time) {
	loc.mu.Lock()
	if t.After(loc.blockedUntil) {
		loc.blockedUntil = t
	}
	loc.mu.Unlock()
}

// idle reports whether the entry says nothing a new one would not.
func (loc *local) idle(now time.Time) bool {
	loc.mu.Lock()
	blocked := now.Before(loc.blockedUntil)
	loc.mu.Unlock()
	return !blocked && loc.limiter.TokensAt(now) >= loc.burst
}
