package dbutil

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// OrgShare is the default of ShareByOrg's max for a pool of size
// connections: three quarters of them, at least one, so that the others
// are always left to the other organizations.
func OrgShare(size int32) int { return max(1, int(size)*3/4) }

// ShareByOrg makes a pool opened from cfg (a TenantPool) give one
// organization at most max of its connections at once: an acquire by a
// context of an organization (WithOrg) holding max waits, until one of
// them is released or its context ends, before it asks the pool. Without
// it, an organization whose requests wait inside the database (a lock, a
// slow listing, a burst of changes that take turns on its audit chain)
// holds one connection each, and with enough of them every connection,
// so that every other organization's requests wait for the pool as long.
// An acquire with no organization is not counted. It sets
// cfg.ConnConfig.Tracer, which must be unset.
func ShareByOrg(cfg *pgxpool.Config, max int) {
	cfg.ConnConfig.Tracer = &orgShare{max: max, orgs: map[string]*orgSlots{}}
}

// orgShare counts each organization's connections through the pool's
// acquire and release hooks (pgxpool.AcquireTracer, ReleaseTracer).
type orgShare struct {
	max  int
	mu   sync.Mutex
	orgs map[string]*orgSlots
}

// orgSlots is an organization's share: a token in slots for each
// connection it holds, refs its holders and waiters, so that an
// organization with neither is forgotten.
type orgSlots struct {
	slots chan struct{}
	refs  int
}

// held is one connection counted against org, from its acquire to its
// release.
type held struct {
	org   string
	slots *orgSlots
}

type heldKey struct{}

// heldData is where a connection keeps the held it is counted as.
const heldData = "outboxd.org_share"

var (
	_ pgxpool.AcquireTracer = (*orgShare)(nil)
	_ pgxpool.ReleaseTracer = (*orgShare)(nil)
	_ pgx.QueryTracer       = (*orgShare)(nil)
)

// TraceAcquireStart waits for a slot of ctx's organization. When ctx ends
// first it returns ctx, whose error the acquire then fails with.
func (s *orgShare) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	org := OrgFrom(ctx)
	if org == "" {
		return ctx
	}
	s.mu.Lock()
	slots := s.orgs[org]
	if slots == nil {
		slots = &orgSlots{slots: make(chan struct{}, s.max)}
		s.orgs[org] = slots
	}
	slots.refs++
	s.mu.Unlock()
	h := &held{org: org, slots: slots}
	select {
	case slots.slots <- struct{}{}:
		return context.WithValue(ctx, heldKey{}, h)
	case <-ctx.Done():
		s.forget(h)
		return ctx
	}
}

// TraceAcquireEnd gives the slot back when the acquire failed, and
// otherwise records it with the connection until its release.
func (s *orgShare) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, data pgxpool.TraceAcquireEndData) {
	h, _ := ctx.Value(heldKey{}).(*held)
	if h == nil {
		return
	}
	if data.Err != nil || data.Conn == nil {
		s.release(h)
		return
	}
	data.Conn.PgConn().CustomData()[heldData] = h
}

// TraceRelease gives back the slot of a connection returned to the pool.
func (s *orgShare) TraceRelease(_ *pgxpool.Pool, data pgxpool.TraceReleaseData) {
	custom := data.Conn.PgConn().CustomData()
	if h, ok := custom[heldData].(*held); ok {
		delete(custom, heldData)
		s.release(h)
	}
}

func (s *orgShare) release(h *held) {
	<-h.slots.slots
	s.forget(h)
}

// forget drops h's reference to its organization's slots.
func (s *orgShare) forget(h *held) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.slots.refs--
	if h.slots.refs == 0 {
		delete(s.orgs, h.org)
	}
}

// TraceQueryStart and TraceQueryEnd make orgShare a pgx.QueryTracer, the
// type of ConnConfig.Tracer; they do nothing.
func (s *orgShare) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (s *orgShare) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
