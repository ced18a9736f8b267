package httpserver

import "sync"

// OrgLimiter caps the requests one organization has in progress in this
// process (event streams, waiting invokes and MCP calls, MCP sessions'
// streams included) at Config.MaxOrgRequests, a share of MaxConns: one
// organization's open requests then never hold every connection while
// another's wait in the accept queue.
type OrgLimiter struct {
	max int

	mu     sync.Mutex
	active map[string]int
}

// NewOrgLimiter returns the limiter of cfg's MaxOrgRequests.
func NewOrgLimiter(cfg *Config) *OrgLimiter {
	return &OrgLimiter{max: cfg.WithDefaults().MaxOrgRequests, active: map[string]int{}}
}

// Max is the cap.
func (l *OrgLimiter) Max() int { return l.max }

// Acquire counts a request of org in progress, and returns what ends it;
// ok is false, and nothing is counted, when org is at the cap. A nil
// OrgLimiter admits everything.
func (l *OrgLimiter) Acquire(org string) (release func(), ok bool) {
	if l == nil {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active[org] >= l.max {
		return nil, false
	}
	l.active[org]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.active[org]--; l.active[org] == 0 {
				delete(l.active, org)
			}
		})
	}, true
}
