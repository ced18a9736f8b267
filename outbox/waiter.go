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
// dedicated connection and wakes the subscribers of each id it hears.
type waiter struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	mu   sync.Mutex
	subs map[uuid.UUID][]chan struct{}
}

func newWaiter(pool *pgxpool.Pool, logger *slog.Logger) *waiter {
	return &waiter{pool: pool, logger: logger, subs: map[uuid.UUID][]chan struct{}{}}
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
			InvocationID uuid.UUID `json:"invocation_id"`
		}
		if json.Unmarshal([]byte(n.Payload), &ev) == nil {
			w.wake(ev.InvocationID)
		}
	}
}
