package worker

import (
	"context"
	"sync"
	"time"
)

// orgSlots bounds the execute jobs one organization has running at once
// in this process (Config.MaxOrgWorkers), so that an organization whose
// calls hang leaves the other workers to the others. The rate buckets do
// not: a connector's or a database's bucket is its own, and an
// organization registers as many as it likes, each holding workers for
// the call's whole deadline.
//
// A job over its organization's share first waits for one of the
// organization's slots a little while (orgSlotWait), as it would when
// River has fetched more of one organization's jobs than the share (a
// backlog fetched a thousand at a time) whose calls end within
// milliseconds: snoozed at once, they would go round the queue again and
// again. Only a job that finds no slot in that time gives its worker up
// (and is snoozed), as when the organization's calls hang.
type orgSlots struct {
	max int
	mu  sync.Mutex
	// orgs are the organizations with a job running or waiting here.
	orgs map[string]*orgSem
}

// orgSem is one organization's slots: a token in ch for each job of it
// running, and users counting those and the jobs waiting for one.
type orgSem struct {
	ch    chan struct{}
	users int
}

func newOrgSlots(max int) *orgSlots { return &orgSlots{max: max, orgs: map[string]*orgSem{}} }

// acquire takes one of org's slots, waiting up to wait for one; it
// returns false when none came free in that time (or ctx ended). release
// gives it back.
func (o *orgSlots) acquire(ctx context.Context, org string, wait time.Duration) (release func(), ok bool) {
	o.mu.Lock()
	s := o.orgs[org]
	if s == nil {
		s = &orgSem{ch: make(chan struct{}, o.max)}
		o.orgs[org] = s
	}
	s.users++
	o.mu.Unlock()
	leave := func() {
		o.mu.Lock()
		if s.users--; s.users == 0 {
			delete(o.orgs, org)
		}
		o.mu.Unlock()
	}
	select {
	case s.ch <- struct{}{}:
	default:
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case s.ch <- struct{}{}:
		case <-timer.C:
			leave()
			return nil, false
		case <-ctx.Done():
			leave()
			return nil, false
		}
	}
	return func() {
		<-s.ch
		leave()
	}, true
}
