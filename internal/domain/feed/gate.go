package feed

import (
	"context"
	"sync"
)

// orgGate bounds the feed reads one organization has running at once, so
// that its event streams, however many (each reads when its doorbell
// rings, all at once, and every Poll), hold at most that many of the
// pool's connections and queue among themselves, not ahead of the other
// organizations' requests.
type orgGate struct {
	max  int
	mu   sync.Mutex
	orgs map[string]*gateEntry
}

type gateEntry struct {
	slots chan struct{}
	users int // waiting or inside; the entry goes with the last
}

func newOrgGate(max int) *orgGate { return &orgGate{max: max, orgs: map[string]*gateEntry{}} }

// enter waits for one of org's slots (or ctx's end) and returns what gives
// it back.
func (g *orgGate) enter(ctx context.Context, org string) (func(), error) {
	g.mu.Lock()
	e := g.orgs[org]
	if e == nil {
		e = &gateEntry{slots: make(chan struct{}, g.max)}
		g.orgs[org] = e
	}
	e.users++
	g.mu.Unlock()
	leave := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if e.users--; e.users == 0 {
			delete(g.orgs, org)
		}
	}
	select {
	case e.slots <- struct{}{}:
		return func() { <-e.slots; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
