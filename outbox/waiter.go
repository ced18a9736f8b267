package outbox

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/invocation"
)

// waiter lets requests wait for the worker that finishes their invocation,
// possibly in another process: it LISTENs on invocation.EventsChannel on one
// dedicated connection and wakes the subscribers of each id it hears, and
// the event streams of each organization.
//
// A wake-up is a doorbell, not the event: each subscriber has a channel of
// one slot that a notification fills if it is empty, and the subscriber
// then reads the events table from its own cursor. A subscriber that is
// slow to answer costs one slot however many events it misses meanwhile,
// and never holds up the listener or the other subscribers.
type waiter struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	// heard counts the events announced, by type.
	heard func(typ string)

	mu      sync.Mutex
	subs    map[uuid.UUID][]chan struct{}
	orgSubs map[string][]chan struct{}
}

func newWaiter(pool *pgxpool.Pool, logger *slog.Logger, heard func(typ string)) *waiter {
	return &waiter{pool: pool, logger: logger, heard: heard, subs: map[uuid.UUID][]chan struct{}{}, orgSubs: map[string][]chan struct{}{}}
}

// subscribeOrg returns a channel that receives when an event of the
// organization is announced (or announcements may have been missed), and a
// function to drop the subscription.
func (w *waiter) subscribeOrg(org string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.orgSubs[org] = append(w.orgSubs[org], ch)
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.orgSubs[org] = removeChan(w.orgSubs[org], ch)
		if len(w.orgSubs[org]) == 0 {
			delete(w.orgSubs, org)
		}
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

func (w *waiter) wakeOrg(org string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.orgSubs[org] {
		ring(ch)
	}
}

// subscribe returns a channel that receives when id is reported done, and a
// function to drop the subscription.
func (w *waiter) subscribe(id uuid.UUID) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs[id] = append(w.subs[id], ch)
	w.mu.Unlock()
	return ch, func() {
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
	for _, list := range w.orgSubs {
		for _, ch := range list {
			ring(ch)
		}
	}
	w.mu.Unlock()
	for _, id := range ids {
		w.wake(id)
	}
}

// run listens until ctx is done, reconnecting after failures.
func (w *waiter) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		w.logger.Warn("notification listener lost its connection; reconnecting", "error", err)
		w.wakeAll()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (w *waiter) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+invocation.EventsChannel); err != nil {
		return err
	}
	w.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var ev struct {
			InvocationID   uuid.UUID `json:"invocation_id"`
			OrganizationID string    `json:"organization_id"`
			Type           string    `json:"type"`
		}
		if json.Unmarshal([]byte(n.Payload), &ev) == nil {
			w.wake(ev.InvocationID)
			w.wakeOrg(ev.OrganizationID)
			if w.heard != nil {
				w.heard(ev.Type)
			}
		}
	}
}
