package webhook_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook"
)

// TestWebhook_OneOrganizationsHangingEndpointsLeaveWorkersToOthers: an
// organization whose endpoints never answer holds at most its share of a
// worker process's delivery workers; another organization's delivery is
// made meanwhile. Before, its deliveries took every worker of the webhooks
// queue for the attempt's whole deadline, again on every retry, and the
// other organization's waited behind them.
func TestWebhook_OneOrganizationsHangingEndpointsLeaveWorkersToOthers(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Webhooks: webhook.Config{MaxWorkers: 4, Timeout: 5 * time.Minute}})
	b.StoreSlackToken("xoxb-fair")

	var hung atomic.Int32
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hung.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(hanging.Close)
	var answered atomic.Int32
	fine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(fine.Close)
	t.Cleanup(func() { close(release) })

	// org-1: two endpoints that hang, four events for each.
	createWebhook(t, b, hanging.URL+"/a", "action_approval_request")
	createWebhook(t, b, hanging.URL+"/b", "action_approval_request")
	for range 4 {
		require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)
	}
	require.Eventually(t, func() bool { return hung.Load() >= 1 }, 15*time.Second, 10*time.Millisecond)

	// org-2: one endpoint that answers, one event.
	admin2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleAdmin})
	r := b.Do("POST", "/v1/webhooks", admin2, map[string]any{"url": fine.URL, "events": []string{"action_approval_request"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["webhook"].(map[string]any)["id"].(string)
	sandbox2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: apptest.Session})
	r = b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", sandbox2,
		map[string]any{"integration": "slack", "action": "send_message", "params": message})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))

	require.Eventually(t, func() bool {
		r := b.Do("GET", "/v1/webhooks/"+id+"/deliveries", admin2, nil)
		ds, _ := r.Body["deliveries"].([]any)
		return len(ds) == 1 && ds[0].(map[string]any)["status"] == "delivered"
	}, 30*time.Second, 50*time.Millisecond, "org-2's delivery waits for org-1's hanging ones (%d held)", hung.Load())
	require.EqualValues(t, 1, answered.Load())
	require.EqualValues(t, 1, hung.Load(), "org-1 holds one of the four workers (webhooks.max_org_workers derived: a quarter)")
}

// TestWebhook_EndpointsPerOrganizationCapped: an organization may have
// webhooks.max_endpoints endpoints; one more is a 409 and is not kept,
// also when the creates race; deleting one makes room. Before, there was
// no cap: every event of the organization became a delivery row, with the
// whole payload, per endpoint, and the relay read every endpoint on every
// pass for every organization.
func TestWebhook_EndpointsPerOrganizationCapped(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Webhooks: webhook.Config{MaxEndpoints: 3}})
	var ids []string
	for i := range 3 {
		id, _ := createWebhook(t, b, "https://hooks.example.com/"+strconv.Itoa(i), "action_completed")
		ids = append(ids, id)
	}

	r := b.Do("POST", "/v1/webhooks", b.Admin(), map[string]any{"url": "https://hooks.example.com/over", "events": []string{"action_completed"}})
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "webhooks.max_endpoints")
	require.Len(t, b.Do("GET", "/v1/webhooks", b.Admin(), nil).Body["webhooks"], 3)

	// Another organization has its own.
	admin2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleAdmin})
	r = b.Do("POST", "/v1/webhooks", admin2, map[string]any{"url": "https://hooks.example.com/2", "events": []string{"action_completed"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	// Racing creates: at most the cap is kept.
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/v1/webhooks/"+ids[0], b.Admin(), nil).Status)
	var wg sync.WaitGroup
	var created atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			r := b.Do("POST", "/v1/webhooks", b.Admin(), map[string]any{"url": "https://hooks.example.com/race" + strconv.Itoa(i), "events": []string{"action_completed"}})
			if r.Status == http.StatusCreated {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, created.Load(), int32(1))
	require.LessOrEqual(t, len(b.Do("GET", "/v1/webhooks", b.Admin(), nil).Body["webhooks"].([]any)), 3)
}
