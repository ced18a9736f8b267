package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An organization at its share waits for one of its own slots: it gets
// the one a running job gives back, gives up when none comes, and leaves
// other organizations' slots alone; an organization with nothing running
// or waiting is forgotten.
func TestOrgSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := newOrgSlots(2)
	r1, ok := o.acquire(ctx, "org-1", 0)
	require.True(t, ok)
	r2, ok := o.acquire(ctx, "org-1", 0)
	require.True(t, ok)

	_, ok = o.acquire(ctx, "org-1", 0)
	require.False(t, ok, "at its share, no slot comes free")
	other, ok := o.acquire(ctx, "org-2", 0)
	require.True(t, ok, "another organization has slots of its own")
	other()

	// A slot given back while a job waits goes to it.
	got := make(chan bool)
	go func() {
		release, ok := o.acquire(ctx, "org-1", time.Hour)
		if ok {
			defer release()
		}
		got <- ok
	}()
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.orgs["org-1"].users == 3
	}, 10*time.Second, time.Millisecond, "the third job waits")
	r1()
	require.True(t, <-got)
	// Its share full again once that job has ended.
	r3, ok := o.acquire(ctx, "org-1", time.Hour)
	require.True(t, ok)

	// A waiting job whose context ends gives up.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, ok = o.acquire(cancelled, "org-1", time.Hour)
	require.False(t, ok)

	r2()
	r3()
	o.mu.Lock()
	defer o.mu.Unlock()
	require.Empty(t, o.orgs, "nothing running or waiting is kept")
}
