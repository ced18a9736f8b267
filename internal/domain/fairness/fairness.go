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
// nothing for a while are forgotten; tellEvery how often at most Behind
// says to tell of an organization past its rate.
const (
	sweepEvery = time.Minute
	tellEvery  = time.Minute
)

// Meter counts each organization's invocations in this process against a
// token bucket: perSecond, with burst at once. It is one process's view:
// an organization whose requests several API processes share gets each
// process's rate.
type Meter struct {
	limit rate.Limit
	burst int

	mu    sync.Mutex
	orgs  map[string]*meter
	swept time.Time
}

// meter is one organization's bucket, and when Behind last said to tell.
type meter struct {
	bucket *rate.Limiter
	told   time.Time
}

// NewMeter returns a Meter allowing each organization perSecond
// invocations, burst of them at once.
func NewMeter(perSecond float64, burst int) *Meter {
	return &Meter{limit: rate.Limit(perSecond), burst: burst, orgs: map[string]*meter{}}
}

// PriorityBehind is the River priority of a job queued behind: River
// fetches every available job of priority 1 (its default) first.
const PriorityBehind = 2

// Behind counts an invocation (or a job) of org made at now and reports
// whether it is past the organization's fair rate: its job then queues
// behind the jobs of organizations within theirs (PriorityBehind). tell is
// true for the first such one of the organization in a minute, for a log
// line that does not repeat for each. A nil Meter puts nothing behind.
func (m *Meter) Behind(org string, now time.Time) (behind, tell bool) {
	if m == nil {
		return false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.swept) >= sweepEvery {
		m.sweep(now)
	}
	o, ok := m.orgs[org]
	if !ok {
		o = &meter{bucket: rate.NewLimiter(m.limit, m.burst)}
		m.orgs[org] = o
	}
	if o.bucket.AllowN(now, 1) {
		return false, false
	}
	if now.Sub(o.told) >= tellEvery {
		o.told = now
		return true, true
	}
	return true, false
}

// sweep forgets the organizations whose buckets have filled again: a new
// one starts full, the same.
func (m *Meter) sweep(now time.Time) {
	m.swept = now
	for org, o := range m.orgs {
		if o.bucket.TokensAt(now) >= float64(m.burst) {
			delete(m.orgs, org)
		}
	}
}
