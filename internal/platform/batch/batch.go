// Package batch runs the calls that arrive while one is under way together,
// as one: group commit. Every call of outboxd's hot path that takes a row
// lock or a WAL flush (a bucket's row, the start and the end of a job) goes
// through a Group, so jobs running at the same moment share one statement or
// one transaction instead of queueing for it one by one.
//
// There is no background goroutine and no timer: a call that finds the
// group idle runs at once, alone; calls arriving meanwhile queue, and when
// it finishes the first of them leads the next batch with everything queued
// by then. A lone call therefore never waits, and under load the batches
// grow by themselves to what arrived during one round trip.
package batch

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Result is one item's outcome.
type Result[R any] struct {
	Value R
	Err   error
}

// Group batches calls to Run. The zero value is not usable: set Run.
type Group[T, R any] struct {
	// Run does the work of one batch and returns one Result per item, in
	// order. Its context is the leading call's, without its cancellation:
	// a batch carries other callers' items too.
	Run func(ctx context.Context, items []T) []Result[R]
	// Max caps the items of one batch; 0 means no cap.
	Max int
	// Parallel is how many batches may run at once; 0 means one. With
	// more, a call that finds fewer running starts another at once, and
	// each batch that ends hands what queued meanwhile to the next.
	Parallel int
	// LeaveOnCancel lets a queued call whose context ends leave the queue
	// and return the context's error: for reads, whose callers stop
	// waiting. A write's caller stays (its item may be written whether
	// it waits or not), as every call does once its batch has begun.
	LeaveOnCancel bool

	mu      sync.Mutex
	queue   []*call[T, R]
	running int
}

type call[T, R any] struct {
	item T
	res  Result[R]
	// lead receives the batch this call is to run, or nil once res is set.
	lead chan []*call[T, R]
}

// Do adds item to the next batch and returns its result.
func (g *Group[T, R]) Do(ctx context.Context, item T) (R, error) {
	c := &call[T, R]{item: item, lead: make(chan []*call[T, R], 1)}
	g.mu.Lock()
	if g.running < max(g.Parallel, 1) && len(g.queue) == 0 {
		g.running++
		g.mu.Unlock()
		return g.run(ctx, c, []*call[T, R]{c})
	}
	g.queue = append(g.queue, c)
	g.mu.Unlock()
	var cancelled <-chan struct{}
	if g.LeaveOnCancel {
		cancelled = ctx.Done()
	}
	select {
	case batch := <-c.lead:
		return g.follow(ctx, c, batch)
	case <-cancelled:
		if g.leave(c) {
			var zero R
			return zero, ctx.Err()
		}
		return g.follow(ctx, c, <-c.lead) // in a batch already
	}
}

// follow runs batch, which c leads, or returns c's result once batch is
// nil (another call led it).
func (g *Group[T, R]) follow(ctx context.Context, c *call[T, R], batch []*call[T, R]) (R, error) {
	if batch != nil {
		return g.run(ctx, c, batch)
	}
	return c.res.Value, c.res.Err
}

// leave takes c out of the queue, unless a batch has taken it.
func (g *Group[T, R]) leave(c *call[T, R]) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.queue, c)
	if i < 0 {
		return false
	}
	g.queue = slices.Delete(g.queue, i, i+1)
	return true
}

// run runs batch, led by c, then hands the calls queued meanwhile to the
// first of them as the next batch, and answers the others of its own.
func (g *Group[T, R]) run(ctx context.Context, c *call[T, R], batch []*call[T, R]) (R, error) {
	items := make([]T, len(batch))
	for i, b := range batch {
		items[i] = b.item
	}
	results, panicked := g.runItems(context.WithoutCancel(ctx), items)

	g.mu.Lock()
	if n := len(g.queue); n > 0 {
		if g.Max > 0 {
			n = min(n, g.Max)
		}
		next := g.queue[:n:n]
		g.queue = g.queue[n:]
		next[0].lead <- next
	} else {
		g.running--
	}
	g.mu.Unlock()
	for i, b := range batch {
		b.res = results[i]
		if b != c {
			b.lead <- nil
		}
	}
	if panicked != nil {
		panic(panicked)
	}
	return c.res.Value, c.res.Err
}

// runItems calls Run. A panic in it is every item's error, so that the
// calls of the batch and those queued behind it are answered and the
// group goes on (a recovered panic, as River's workers and the HTTP
// server recover, left them waiting forever); it is returned for the
// leading call to panic with again.
func (g *Group[T, R]) runItems(ctx context.Context, items []T) (results []Result[R], panicked any) {
	defer func() {
		if panicked = recover(); panicked != nil {
			err := fmt.Errorf("batch: panic: %v", panicked)
			results = make([]Result[R], len(items))
			for i := range results {
				results[i].Err = err
			}
		}
	}()
	return g.Run(ctx, items), nil
}

// Queued is how many calls wait for a batch to start (for tests and
// metrics).
func (g *Group[T, R]) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// Isolated returns a Run for a Group from run, which does a whole batch at
// once (one statement, one transaction) and either answers for every item
// or fails as a whole. A batch that fails is done again one item at a
// time, so that one item's error is never another's.
func Isolated[T, R any](run func(ctx context.Context, items []T) ([]Result[R], error)) func(context.Context, []T) []Result[R] {
	return func(ctx context.Context, items []T) []Result[R] {
		out, err := run(ctx, items)
		if err == nil {
			return out
		}
		out = make([]Result[R], len(items))
		if len(items) == 1 {
			out[0].Err = err
			return out
		}
		for i := range items {
			one, err := run(ctx, items[i:i+1])
			if err != nil {
				out[i].Err = err
				continue
			}
			out[i] = one[0]
		}
		return out
	}
}
