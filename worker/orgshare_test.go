package worker_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/worker"
)

// TestExecute_OneOrganizationsSlowCallsLeaveWorkersToOthers: an
// organization whose calls hang (a provider, connector or database of its
// own that never answers: it may register as many as it likes, each with
// a bucket of its own) holds at most its share of a worker process's
// execute workers, and another organization's call runs meanwhile. Before,
// its jobs took every worker for the call's whole deadline and the other
// organization's waited behind them.
func TestExecute_OneOrganizationsSlowCallsLeaveWorkersToOthers(t *testing.T) {
	t.Parallel()
	var hung atomic.Int32
	release := make(chan struct{})
	b := apptest.Start(t, &apptest.Options{
		Worker: worker.Config{MaxWorkers: 4, CallTimeout: 5 * time.Minute},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "Bearer xoxb-org-1" {
				hung.Add(1)
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
			apptest.SlackOK(w, r)
		},
	})
	t.Cleanup(func() { close(release) })

	// org-1: four calls that hang.
	b.StoreSlackToken("xoxb-org-1")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	for i := range 4 {
		enqueue(t, b, "hang-"+string(rune('a'+i)))
	}
	require.Eventually(t, func() bool { return hung.Load() >= 3 }, 15*time.Second, 10*time.Millisecond)

	// org-2: one call, to a Slack that answers.
	owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	r := b.Do("PUT", "/v1/credentials/slack", owner2, map[string]string{"token": "xoxb-org-2"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("PUT", "/v1/action-modes", owner2, map[string]string{"slack:send_message": "allow"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	service2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindService, AutomationID: "automation-1"})
	r = b.Do("POST", "/v1/envelopes", service2, map[string]any{
		"external_id": "fine-1",
		"tool":        map[string]string{"source": "slack", "action": "send_message"},
		"args":        map[string]string{"channel": "C0123456789", "text": "hello"},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["action_id"].(string)

	deadline := time.Now().Add(30 * time.Second)
	for {
		r := b.Do("GET", "/v1/envelopes/"+id, service2, nil)
		if r.Body["invocation_status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			state, attempt := jobRow(t, b, id)
			t.Fatalf("org-2's call waits for org-1's hanging ones (%d held): job %s (attempt %d), %s", hung.Load(), state, attempt, r.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.EqualValues(t, 3, hung.Load(), "org-1 holds three of the four workers (worker.max_org_workers derived: three quarters)")
}
