package apptest

import (
	"sync"
	"time"
)

// Clock is a stubbed clock for River and the workers (a
// rivertype.TimeGenerator): the wall clock moved forward by what Advance
// added. River then schedules, and the workers judge deadlines, as if that
// much time had passed; Postgres' now() and the API's clock do not move.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// Now is the wall clock plus what Advance added.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// NowOrNil is Now: the time is always stubbed, so River passes it to its
// queries instead of using Postgres' now().
func (c *Clock) NowOrNil() *time.Time {
	now := c.Now().UTC()
	return &now
}
