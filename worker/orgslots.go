package worker

import "sync"

// orgSlots bounds the execute jobs one organization has running at once
// in this process (Config.MaxOrgWorkers), so that an organization whose
// calls hang leaves the other workers to the others. The rate buckets do
// not: a connector's or a database's bucket is its own, and an
// organization registers as many as it likes, each holding workers for
// the call's whole deadline.
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
