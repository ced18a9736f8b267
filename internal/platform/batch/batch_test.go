package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/batch"
)

// TestGroup_BatchesConcurrentCalls holds the first batch open until every
// other call has queued, so the second batch must carry all of them, each
// with its own result.
func TestGroup_BatchesConcurrentCalls(t *testing.T) {
	const n = 50
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	g := &batch.Group[int, string]{Run: func(ctx context.Context, items []int) []batch.Result[string] {
		mu.Lock()
		sizes = append(sizes, len(items))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			<-release
		}
		out := make([]batch.Result[string], len(items))
		for i, it := range items {
			if it%7 == 0 {
				out[i].Err = fmt.Errorf("item %d refused", it)
				continue
			}
			out[i].Value = fmt.Sprint("done ", it)
		}
		return out
	}}

	results := make([]batch.Result[string], n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the first call, which leads the first batch alone
		defer wg.Done()
		v, err := g.Do(context.Background(), 1)
		results[1] = batch.Result[string]{Value: v, Err: err}
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 }, timeout, tick)
	var queued sync.WaitGroup
	for i := 2; i < n; i++ {
		wg.Add(1)
		queued.Add(1)
		go func() {
			defer wg.Done()
			queued.Done()
			v, err := g.Do(context.Background(), i)
			results[i] = batch.Result[string]{Value: v, Err: err}
		}()
	}
	queued.Wait()
	// Every goroutine has started; give them the moment they need to reach
	// the queue, then let the first batch finish.
	require.Eventually(t, func() bool { return g.Queued() == n-2 }, timeout, tick)
	close(release)
	wg.Wait()

	require.Equal(t, []int{1, n - 2}, sizes)
	for i := 1; i < n; i++ {
		if i%7 == 0 {
			require.EqualError(t, results[i].Err, fmt.Sprintf("item %d refused", i))
		} else {
			require.NoError(t, results[i].Err)
			require.Equal(t, fmt.Sprint("done ", i), results[i].Value)
		}
	}
}

// TestGroup_Max splits a queue longer than Max into several batches, none
// larger than Max, losing no item.
func TestGroup_Max(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]bool{}
	largest := 0
	g := &batch.Group[int, int]{Max: 4, Run: func(ctx context.Context, items []int) []batch.Result[int] {
		mu.Lock()
		largest = max(largest, len(items))
		for _, it := range items {
			seen[it] = true
		}
		mu.Unlock()
		out := make([]batch.Result[int], len(items))
		for i, it := range items {
			out[i].Value = it * 2
		}
		return out
	}}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := g.Do(context.Background(), i)
			if err != nil || v != i*2 {
				t.Errorf("item %d: got %d, %v", i, v, err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, 200)
	require.LessOrEqual(t, largest, 4)
}

// TestGroup_Parallel: with Parallel 2, a call that finds one batch running
// starts a second at once; the next calls queue, and the first batch to
// end hands them all to one new batch. No call is lost or answered twice.
func TestGroup_Parallel(t *testing.T) {
	release := make(chan struct{})
	var (
		mu      sync.Mutex
		running []int // items of each batch run so far, by start
	)
	g := &batch.Group[int, int]{Parallel: 2, Run: func(ctx context.Context, items []int) []batch.Result[int] {
		mu.Lock()
		running = append(running, len(items))
		first := len(running) <= 2
		mu.Unlock()
		if first {
			<-release
		}
		out := make([]batch.Result[int], len(items))
		for i, it := range items {
			out[i].Value = it + 100
		}
		return out
	}}
	started := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(running) == n }
	}
	var wg sync.WaitGroup
	do := func(i int) {
		wg.Go(func() {
			v, err := g.Do(context.Background(), i)
			if err != nil || v != i+100 {
				t.Errorf("item %d: got %d, %v", i, v, err)
			}
		})
	}
	do(0)
	require.Eventually(t, started(1), time.Second, time.Millisecond)
	do(1)
	require.Eventually(t, started(2), time.Second, time.Millisecond, "a second batch starts beside the first")
	for i := 2; i < 12; i++ {
		do(i)
	}
	require.Eventually(t, func() bool { return g.Queued() == 10 }, time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	require.Equal(t, []int{1, 1, 10}, running)
}

// TestGroup_LeaderCancelled: a batch runs to the end for everyone in it even
// when the call that leads it has its context cancelled.
func TestGroup_LeaderCancelled(t *testing.T) {
	g := &batch.Group[int, error]{Run: func(ctx context.Context, items []int) []batch.Result[error] {
		out := make([]batch.Result[error], len(items))
		for i := range items {
			out[i].Err = ctx.Err()
		}
		return out
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Do(ctx, 1)
	require.False(t, errors.Is(err, context.Canceled))
}

// TestGroup_LeaveOnCancel: with LeaveOnCancel, a queued call whose context
// ends returns at once and its item is left out of the next batch;
// without it, the call waits for its batch and gets its result.
func TestGroup_LeaveOnCancel(t *testing.T) {
	for _, leave := range []bool{true, false} {
		t.Run(fmt.Sprint("leave=", leave), func(t *testing.T) {
			release := make(chan struct{})
			var mu sync.Mutex
			var batches [][]int
			g := &batch.Group[int, int]{LeaveOnCancel: leave, Run: func(ctx context.Context, items []int) []batch.Result[int] {
				mu.Lock()
				batches = append(batches, slices.Clone(items))
				mu.Unlock()
				if items[0] == 1 {
					<-release
				}
				out := make([]batch.Result[int], len(items))
				for i, it := range items {
					out[i].Value = it * 10
				}
				return out
			}}
			first := make(chan int)
			go func() { v, _ := g.Do(context.Background(), 1); first <- v }()
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 }, timeout, tick)

			ctx, cancel := context.WithCancel(context.Background())
			cancelled := make(chan batch.Result[int])
			go func() { v, err := g.Do(ctx, 2); cancelled <- batch.Result[int]{Value: v, Err: err} }()
			require.Eventually(t, func() bool { return g.Queued() == 1 }, timeout, tick)
			stays := make(chan int)
			go func() { v, _ := g.Do(context.Background(), 3); stays <- v }()
			require.Eventually(t, func() bool { return g.Queued() == 2 }, timeout, tick)
			cancel()
			if leave {
				select {
				case r := <-cancelled: // before the batch ahead of it ends
					require.ErrorIs(t, r.Err, context.Canceled)
				case <-time.After(timeout):
					t.Fatal("the cancelled call still waits for the batch ahead of it")
				}
				require.Equal(t, 1, g.Queued())
			}
			close(release)
			require.Equal(t, 10, <-first)
			require.Equal(t, 30, <-stays)
			if leave {
				require.Equal(t, [][]int{{1}, {3}}, batches)
			} else {
				r := <-cancelled
				require.NoError(t, r.Err)
				require.Equal(t, 20, r.Value)
				require.Equal(t, [][]int{{1}, {2, 3}}, batches)
			}
		})
	}
}

// TestIsolated: a batch that fails as a whole is done again item by item,
// so only the item that fails alone gets an error.
func TestIsolated(t *testing.T) {
	var calls [][]int
	run := batch.Isolated(func(ctx context.Context, items []int) ([]batch.Result[int], error) {
		calls = append(calls, items)
		out := make([]batch.Result[int], len(items))
		for i, it := range items {
			if it == 3 {
				return nil, errors.New("3 spoils its batch")
			}
			out[i].Value = it * 10
		}
		return out, nil
	})
	out := run(context.Background(), []int{1, 2, 3, 4})
	require.Equal(t, [][]int{{1, 2, 3, 4}, {1}, {2}, {3}, {4}}, calls)
	require.Equal(t, 10, out[0].Value)
	require.Equal(t, 20, out[1].Value)
	require.EqualError(t, out[2].Err, "3 spoils its batch")
	require.Equal(t, 40, out[3].Value)

	calls = nil
	out = run(context.Background(), []int{5, 6})
	require.Equal(t, [][]int{{5, 6}}, calls, "a batch that succeeds runs once")
	require.Equal(t, 60, out[1].Value)
}

// A panic in Run, which its leading call's caller may recover (River's
// workers and the HTTP server do), is every item's error: the calls queued
// behind the batch are run, and the group takes calls again.
func TestGroup_PanicInRunDoesNotWedgeTheGroup(t *testing.T) {
	release := make(chan struct{})
	var runs sync.Mutex
	n := 0
	g := &batch.Group[int, int]{Run: func(ctx context.Context, items []int) []batch.Result[int] {
		runs.Lock()
		n++
		first := n == 1
		runs.Unlock()
		if first {
			<-release
			panic("boom")
		}
		out := make([]batch.Result[int], len(items))
		for i, it := range items {
			out[i].Value = it * 2
		}
		return out
	}}

	leader := make(chan any, 1)
	go func() {
		defer func() { leader <- recover() }()
		_, _ = g.Do(context.Background(), 1)
	}()
	require.Eventually(t, func() bool { runs.Lock(); defer runs.Unlock(); return n == 1 }, timeout, tick)
	queued := make(chan batch.Result[int], 1)
	go func() {
		v, err := g.Do(context.Background(), 2)
		queued <- batch.Result[int]{Value: v, Err: err}
	}()
	require.Eventually(t, func() bool { return g.Queued() == 1 }, timeout, tick)
	close(release)

	require.Equal(t, "boom", <-leader, "the leading call panics again")
	select {
	case r := <-queued:
		require.NoError(t, r.Err)
		require.Equal(t, 4, r.Value)
	case <-time.After(timeout):
		t.Fatal("the call queued behind a panicking batch never returned")
	}
	done := make(chan int, 1)
	go func() {
		v, _ := g.Do(context.Background(), 3)
		done <- v
	}()
	select {
	case v := <-done:
		require.Equal(t, 6, v)
	case <-time.After(timeout):
		t.Fatal("the group took no call after a panic")
	}
}
