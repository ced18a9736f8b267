package webhook

import "sync"

// orgSlots bounds the deliveries one organization has running at once in
// this process, so that an organization whose endpoints hang (each attempt
// holding a worker for the whole webhooks.timeout, again on every retry)
// leaves the other workers of the webhooks queue to the others. The
// per-endpoint bucket does not: an organization has as many endpoints as
// it likes.
type orgSlots struct {
	mu   sync.Mutex
	max  int
	busy map[string]int
}

func newOrgSlots(max int) *orgSlots { return &orgSlots{max: max, busy: map[string]int{}} }

// acquire takes one of org's slots, and returns false when it has none
// left; release gives it back.
func (o *orgSlots) acquire(org string) (release func(), ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.busy[org] >= o.max {
		return nil, false
	}
	o.busy[org]++
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.busy[org]--; o.busy[org] <= 0 {
			delete(o.busy, org)
		}
	}, true
}
