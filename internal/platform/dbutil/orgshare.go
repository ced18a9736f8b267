package dbutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/keyed"
)

// OrgShare is the default of ShareByOrg's max for a pool of size
// connections: three quarters of them, at least one, so that the others
// are always left to the other organizations.
func OrgShare(size int32) int { return max(1, int(size)*3/4) }

// DefaultOrgWait is ShareByOrg's default wait: how long an acquire waits
// for a connection of its organization's share.
const DefaultOrgWait = 10 * time.Second

// ErrOrgBusy is the error of an acquire that waited ShareByOrg's whole
// wait for a connection of its organization's share: the organization's
// other work held them all. It is also a context.DeadlineExceeded.
var ErrOrgBusy = errors.New("every connection of this organization's share of the pool stayed in use")

// ShareByOrg makes a pool opened from cfg (a TenantPool) give one
// organization at most max of its connections at once: an acquire by a
// context of an organization (WithOrg) holding max waits, until one of
// them is released, its context ends or wait (0: DefaultOrgWait) has
// passed, before it asks the pool; after wait it fails with ErrOrgBusy.
// Without it, an organization whose requests wait inside the database (a
// lock, a slow listing, a burst of changes that take turns on its audit
// chain) holds one connection each, and with enough of them every
// connection, so that every other organization's requests wait for the
// pool as long. Without the wait, its requests past its share waited as
// long as their own contexts, which an HTTP request's is not bounded by.
// An acquire with no organization is not counted. It sets
// cfg.ConnConfig.Tracer, which must be unset.
func ShareByOrg(cfg *pgxpool.Config, max int, wait time.Duration) {
	if wait <= 0 {
		wait = DefaultOrgWait
	}
	cfg.ConnConfig.Tracer = &orgShare{orgs: keyed.New(max), wait: wait}
}

// orgShare counts each organization's connections through the pool's
// acquire and release hooks (pgxpool.AcquireTracer, ReleaseTracer).
type orgShare struct {
	orgs *keyed.Limiter
	wait time.Duration
}

// busy is the context an acquire that waited out its organization's share
// goes on with: ended, so that the pool fails the acquire at once with
// its Err, which says why.
type busy struct{ context.Context }

var (
	ended   = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
	errBusy = fmt.Errorf("%w (%w)", ErrOrgBusy, context.DeadlineExceeded)
)

func (busy) Done() <-chan struct{} { return ended }
func (busy) Err() error            { return errBusy }

// heldKey is the context key of an acquire's slot, from the start of the
// acquire to its end.
type heldKey struct{}

// heldData is where a connection keeps the release of the slot it is
// counted in, until it goes back to the pool.
const heldData = "outboxd.org_share"

var (
	_ pgxpool.AcquireTracer = (*orgShare)(nil)
	_ pgxpool.ReleaseTracer = (*orgShare)(nil)
	_ pgx.QueryTracer       = (*orgShare)(nil)
)

// TraceAcquireStart waits for a slot of ctx's organization. When ctx ends
// first it returns ctx, whose error the acquire then fails with; when the
// wait ends first, a context whose error is ErrOrgBusy.
func (s *orgShare) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	org := OrgFrom(ctx)
	if org == "" {
		return ctx
	}
	release, ok := s.orgs.Try(ctx, org, s.wait)
	switch {
	case ok:
		return context.WithValue(ctx, heldKey{}, release)
	case ctx.Err() != nil:
		return ctx
	}
	return busy{ctx}
}

// TraceAcquireEnd gives the slot back when the acquire failed, and
// otherwise records it with the connection until its release.
func (s *orgShare) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, data pgxpool.TraceAcquireEndData) {
	release, _ := ctx.Value(heldKey{}).(func())
	if release == nil {
		return
	}
	if data.Err != nil || data.Conn == nil {
		release()
		return
	}
	data.Conn.PgConn().CustomData()[heldData] = release
}

// TraceRelease gives back the slot of a connection returned to the pool.
func (s *orgShare) TraceRelease(_ *pgxpool.Pool, data pgxpool.TraceReleaseData) {
	custom := data.Conn.PgConn().CustomData()
	if release, ok := custom[heldData].(func()); ok {
		delete(custom, heldData)
		release()
	}
}

// TraceQueryStart and TraceQueryEnd make orgShare a pgx.QueryTracer, the
// type of ConnConfig.Tracer; they do nothing.
func (s *orgShare) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (s *orgShare) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
