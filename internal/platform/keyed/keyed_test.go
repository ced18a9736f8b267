package keyed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/keyed"
)

// A key at its share waits for one of its own slots: it gets the one a
// holder gives back, gives up when none comes or its context ends, and
// leaves other keys' slots alone; a key with nothing held or waiting is
// forgotten, and a slot given back twice counts once.
func TestLimiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := keyed.New(2)
	r1, ok := l.Try(ctx, "org-1", 0)
	require.True(t, ok)
	r2, err := l.Wait(ctx, "org-1")
	require.NoError(t, err)

	_, ok = l.Try(ctx, "org-1", 0)
	require.False(t, ok, "at its share, no slot comes free")
	other, ok := l.Try(ctx, "org-2", 0)
	require.True(t, ok, "another key has slots of its own")
	other()
	other()
	require.Equal(t, 1, l.Len())

	// A slot given back while another waits goes to it.
	got := make(chan func())
	go func() {
		release, err := l.Wait(ctx, "org-1")
		require.NoError(t, err)
		got <- release
	}()
	r1()
	r3 := <-got

	// Its share full again: a wait whose context ends gives up.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = l.Wait(cancelled, "org-1")
	require.ErrorIs(t, err, context.Canceled)
	_, ok = l.Try(cancelled, "org-1", time.Hour)
	require.False(t, ok)

	r2()
	r3()
	require.Zero(t, l.Len(), "nothing held or waiting is kept")
}
