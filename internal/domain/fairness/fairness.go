// Package fairness tells which organizations ask for more than their fair
// share of the queue, so that their further invocations queue behind
// everyone else's.
//
// River fetches an organization's jobs in the order they were made
// available, whoever made them: without this, a flood of envelopes from
// one organization (a batch import, a runaway automation) holds every
// other organization's work behind it until it has been fetched. The
// workers' share (worker.max_org_workers) bounds what one organization
// runs at once, not this wait.
package fairness

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sweepEvery is how often the meters of organizations that have asked for
// nothing for a while are forgotten.
const sweepEvery = time.Minute

// Meter counts each organization's invocations in this process against a
// token bucket: perSecond, with burst at once. It is one process's view:
// an organization whose requests several API processes share gets each
// process's rate.
type Meter struct {
	limit rate.Limit
	burst int

	mu    sync.Mutex
	orgs  map[string]*rate.Limiter
	swept time.Time
}

// NewMeter returns a Meter allowing each organization perSecond
// invocations, burst of them at once.
func NewMeter(perSecond float64, burst int) *Meter {
	return &Meter{limit: rate.Limit(perSecond), burst: burst, orgs: map[string]*rate.Limiter{}}
}

// Behind counts an invocation of org made at now and reports whether it
// is past the organization's fair rate: its job then queues behind the
// jobs of organizations within theirs.
func (m *Meter) Behind(org string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.swept) >= sweepEvery {
		m.sweep(now)
	}
	l, ok := m.orgs[org]
	if !ok {
		l = rate.NewLimiter(m.limit, m.burst)
		m.orgs[org] = l
	}
	return !l.AllowN(now, 1)
}

// sweep forgets the organizations whose buckets have filled again: a new
// one starts full, the same.
func (m *Meter) sweep(now time.Time) {
	m.swept = now
	for org, l := range m.orgs {
		if l.TokensAt(now) >= float64(m.burst) {
			delete(m.orgs, org)
		}
	}
}
