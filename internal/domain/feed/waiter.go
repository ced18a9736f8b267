package feed

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/feed/feedstore"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// waiter lets requests wait for the worker that finishes their invocation,
// possibly in another process: it LISTENs on invocation.EventsChannel on one
// dedicated connection and wakes the subscribers of each id it hears, and
// the event streams of each organization. On the same connection it LISTENs
// on CatalogChannel, and wakes those who watch an organization's catalog.
//
// It LISTENs only while it has subscribers (and until the next renewal
// after the last one left): a listening backend wakes for every
// notification in the database, River's included, so an idle listener
// costs Postgres a transaction per notification. The first subscriber
// after an idle spell waits for the connection.
//
// Events are announced only for organizations some process listens to
// (migration 019): the waiter lists in event_listeners the organizations
// it has subscribers for, before those subscribers read the state they
// wait on, and renews the rows every listenerRenew while they last.
//
// A wake-up is a doorbell, not the event: each subscriber has a channel of
// one slot that a notification fills if it is empty, and the subscriber
// then reads the events table from its own cursor. A subscriber that is
// slow to answer costs one slot however many events it misses meanwhile,
// and never holds up the listener or the other subscribers.
type waiter struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	// id names this process's rows in event_listeners, which listeners
	// writes.
	id        uuid.UUID
	listeners *feedstore.Listeners

	mu      sync.Mutex
	subs    map[uuid.UUID][]chan struct{}
	orgSubs map[string][]chan struct{}
	// catalogSubs ring when an organization's catalog may have changed
	// (CatalogChannel).
	catalogSubs map[string][]chan struct{}
	// orgs is what this process listens for, by organization.
	orgs map[string]*interest
	// live is closed once the connection LISTENs (up is then true); nil
	// while no subscriber wants one. want tells run one is wanted, and
	// hangUp ends the current connection.
	live   chan struct{}
	up     bool
	want   chan struct{}
	hangUp context.CancelFunc
}

// interest is an organization's subscribers in this process.
type interest struct {
	// n counts the subscribers; at 0 the organization is dropped at the
	// next renewal, and its row expires.
	n int
	// registered is closed once the first subscriber's registration ended
	// (failed or not); later subscribers wait for it.
	registered chan struct{}
}

// How long a registration lasts, how often it is renewed, and how long a
// registration waits for the transactions that announce without it.
const (
	listenerTTL         = 90 * time.Second
	listenerRenew       = 30 * time.Second
	listenerLockTimeout = 5 * time.Second
)

func newWaiter(pool *pgxpool.Pool, logger *slog.Logger) *waiter {
	id := uuid.New()
	return &waiter{
		pool: pool, logger: logger, id: id, listeners: feedstore.New(pool, id),
		subs: map[uuid.UUID][]chan struct{}{}, orgSubs: map[string][]chan struct{}{}, orgs: map[string]*interest{},
		catalogSubs: map[string][]chan struct{}{},
		want:        make(chan struct{}, 1),
	}
}

// listen makes sure this process LISTENs and org's events are announced
// before it returns, and returns a function to call when the subscriber it
// is for is gone. The first subscriber of an organization registers it;
// the others wait for that. A registration that fails, or a connection
// that is not up within listenerLockTimeout, is logged: subscribers also
// poll, so they are late, not lost. A first subscriber whose ctx ends
// still registers, for the others.
func (w *waiter) listen(ctx context.Context, org string) (done func()) {
	w.mu.Lock()
	if w.live == nil {
		w.live = make(chan struct{})
		ring(w.want)
	}
	live := w.live
	in := w.orgs[org]
	first := in == nil
	if first {
		in = &interest{registered: make(chan struct{})}
		w.orgs[org] = in
	}
	in.n++
	w.mu.Unlock()
	done = func() {
		w.mu.Lock()
		in.n--
		w.mu.Unlock()
	}
	select {
	case <-live:
	case <-ctx.Done():
		if !first {
			return done
		}
		// The others wait for the first one's registration.
	case <-time.After(listenerLockTimeout):
		w.logger.WarnContext(ctx, "the notification listener is not up yet; subscribers poll until it is")
	}
	if !first {
		select {
		case <-in.registered:
		case <-ctx.Done():
		}
		return done
	}
	defer close(in.registered)
	// Other subscribers wait for this registration: it is not the
	// request's to cancel.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenerLockTimeout+5*time.Second)
	defer cancel()
	if err := w.listeners.Register(ctx, org, listenerTTL, listenerLockTimeout); err != nil {
		w.logger.WarnContext(ctx, "registering for an organization's events; its subscribers poll until the next renewal",
			"organization_id", org, "error", err)
	}
	return done
}

// renew extends the registrations of the organizations that have
// subscribers, and forgets the others (their rows expire). With none left
// it hangs up the listening connection.
func (w *waiter) renew(ctx context.Context) error {
	w.mu.Lock()
	orgs := make([]string, 0, len(w.orgs))
	for org, in := range w.orgs {
		if in.n == 0 {
			delete(w.orgs, org)
			continue
		}
		orgs = append(orgs, org)
	}
	if len(w.orgs) == 0 && w.live != nil {
		w.live, w.up = nil, false
		select {
		case <-w.want:
		default:
		}
		if w.hangUp != nil {
			w.hangUp()
		}
	}
	w.mu.Unlock()
	return w.listeners.Renew(ctx, orgs, listenerTTL)
}

// subscribeOrg returns a channel that receives when an event of the
// organization is announced (or announcements may have been missed), and a
// function to drop the subscription. The organization's events are
// announced once it returns.
func (w *waiter) subscribeOrg(ctx context.Context, org string) (<-chan struct{}, func()) {
	return w.subscribeIn(ctx, w.orgSubs, org)
}

// subscribeCatalog is subscribeOrg for the organization's catalog changes.
// Its subscriber is a caller of the organization, so the organization's
// events are announced too: its calls wait on them.
func (w *waiter) subscribeCatalog(ctx context.Context, org string) (<-chan struct{}, func()) {
	return w.subscribeIn(ctx, w.catalogSubs, org)
}

func (w *waiter) subscribeIn(ctx context.Context, subs map[string][]chan struct{}, org string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	subs[org] = append(subs[org], ch)
	w.mu.Unlock()
	done := w.listen(ctx, org)
	return ch, func() {
		w.mu.Lock()
		subs[org] = removeChan(subs[org], ch)
		if len(subs[org]) == 0 {
			delete(subs, org)
		}
		w.mu.Unlock()
		done()
	}
}

func removeChan(list []chan struct{}, ch chan struct{}) []chan struct{} {
	for i, c := range list {
		if c == ch {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

func ring(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (w *waiter) wakeOrg(subs map[string][]chan struct{}, org string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range subs[org] {
		ring(ch)
	}
}

// subscribe returns a channel that receives when invocation id of org is
// reported done, and a function to drop the subscription. The
// organization's events are announced once it returns.
func (w *waiter) subscribe(ctx context.Context, org string, id uuid.UUID) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs[id] = append(w.subs[id], ch)
	w.mu.Unlock()
	done := w.listen(ctx, org)
	return ch, func() {
		defer done()
		w.mu.Lock()
		defer w.mu.Unlock()
		list := w.subs[id]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.subs, id)
		} else {
			w.subs[id] = list
		}
	}
}

func (w *waiter) wake(id uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// wakeAll wakes every subscriber, after a reconnect in which notifications
// may have been missed; each then re-reads its row.
func (w *waiter) wakeAll() {
	w.mu.Lock()
	ids := make([]uuid.UUID, 0, len(w.subs))
	for id := range w.subs {
		ids = append(ids, id)
	}
	for _, subs := range []map[string][]chan struct{}{w.orgSubs, w.catalogSubs} {
		for _, list := range subs {
			for _, ch := range list {
				ring(ch)
			}
		}
	}
	w.mu.Unlock()
	for _, id := range ids {
		w.wake(id)
	}
}

// run listens while subscribers want it, until ctx is done, reconnecting
// after failures, and renews the registrations meanwhile; at the end it
// drops them.
func (w *waiter) run(ctx context.Context) {
	renewing := make(chan struct{})
	defer func() {
		// After the last renewal, which would write the rows again.
		<-renewing
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := w.listeners.Drop(ctx); err != nil {
			w.logger.Warn("dropping this process's event registrations; they expire by themselves", "error", err)
		}
	}()
	go func() {
		defer close(renewing)
		tick := time.NewTicker(listenerRenew)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := w.renew(ctx); err != nil && ctx.Err() == nil {
					w.logger.Warn("renewing this process's event registrations", "error", err)
				}
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.want:
		}
		for ctx.Err() == nil {
			connCtx, hangUp := context.WithCancel(ctx)
			w.mu.Lock()
			w.hangUp = hangUp
			w.mu.Unlock()
			err := w.receive(connCtx)
			hungUp := connCtx.Err() != nil
			hangUp()
			w.mu.Lock()
			wanted := w.live != nil
			if wanted && w.up {
				// New subscribers wait for the next connection.
				w.live, w.up = make(chan struct{}), false
			}
			w.mu.Unlock()
			if ctx.Err() != nil || !wanted {
				break
			}
			if hungUp {
				continue // idle, and wanted again since
			}
			w.logger.WarnContext(ctx, "notification listener lost its connection; reconnecting", "error", err)
			w.wakeAll()
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// receive LISTENs on one connection and wakes subscribers until the
// connection fails or ctx is done.
func (w *waiter) receive(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+invocation.EventsChannel+"; LISTEN "+CatalogChannel); err != nil {
		return err
	}
	// Subscribers from before this connection may have missed
	// notifications: they read again. The ones waiting for it need not.
	w.wakeAll()
	w.mu.Lock()
	if w.live != nil && !w.up && ctx.Err() == nil {
		close(w.live)
		w.up = true
	}
	w.mu.Unlock()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == CatalogChannel {
			w.wakeOrg(w.catalogSubs, n.Payload)
			continue
		}
		var ev struct {
			InvocationID   uuid.UUID `json:"invocation_id"`
			OrganizationID string    `json:"organization_id"`
		}
		if json.Unmarshal([]byte(n.Payload), &ev) == nil {
			w.wake(ev.InvocationID)
			w.wakeOrg(w.orgSubs, ev.OrganizationID)
		}
	}
}
