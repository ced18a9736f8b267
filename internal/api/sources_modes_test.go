package api_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestSourcesClaim_ConcurrentModes: tokens narrowed each to its own source
// replace their overrides at the same time, several times over, without
// If-Match: every replacement lands (200, never 412 precondition_failed,
// however many came between), and in the end every source's overrides
// are there, with an override of a source no token names kept as it was.
// Each replacement keeps the others' overrides in its own transaction, so
// none is lost to one made between a read and a write.
func TestSourcesClaim_ConcurrentModes(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.SetModes(map[string]string{"slack:send_message": "require_approval"})
	const writers, rounds = 12, 4
	statuses := make(chan string, writers*rounds)
	var wg sync.WaitGroup
	for i := range writers {
		source := fmt.Sprintf("source-%d", i)
		token := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources(source)})
		wg.Go(func() {
			for round := range rounds {
				mode := []string{"allow", "deny"}[round%2]
				r := b.Do("PUT", "/v1/action-modes", token, map[string]string{source + ":act": mode, source + ":other": "deny"})
				if r.Status != http.StatusOK {
					statuses <- fmt.Sprintf("%s round %d: %d %s", source, round, r.Status, r.Raw)
				}
			}
		})
	}
	wg.Wait()
	close(statuses)
	var failed []string
	for s := range statuses {
		failed = append(failed, s)
	}
	require.Empty(t, failed)

	want := map[string]any{"slack:send_message": "require_approval"}
	for i := range writers {
		source := fmt.Sprintf("source-%d", i)
		want[source+":act"] = []string{"allow", "deny"}[(rounds-1)%2]
		want[source+":other"] = "deny"
	}
	r := b.Do("GET", "/v1/action-modes", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, want, r.Body)
}
