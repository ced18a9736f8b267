package webhook_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook"
)

var message = map[string]any{"channel": "C0123456789", "text": "deploy finished"}

// TestSign_SpecVector checks the signing library against the Standard
// Webhooks specification's published example.
func TestSign_SpecVector(t *testing.T) {
	t.Parallel()
	wh, err := standardwebhooks.NewWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	sig, err := wh.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.NoError(t, err)
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sig)
}

// receiver is a loopback webhook endpoint that verifies every request as a
// receiver would.
type receiver struct {
	t      *testing.T
	server *httptest.Server

	mu       sync.Mutex
	secret   string
	answer   func(msgID string, attempt int) int
	attempts map[string]int
	accepted []map[string]any // payloads answered 2xx, one per webhook-id
	order    []string
}

func newReceiver(t *testing.T, answer func(msgID string, attempt int) int) *receiver {
	rc := &receiver{t: t, answer: answer, attempts: map[string]int{}}
	rc.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(rc.secret)
		require.NoError(t, err)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("webhook-id")
		rc.attempts[id]++
		code := rc.answer(id, rc.attempts[id])
		if code < 300 && !contains(rc.order, id) {
			var payload map[string]any
			require.NoError(t, jsonUnmarshal(body, &payload))
			rc.accepted = append(rc.accepted, payload)
			rc.order = append(rc.order, id)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.server.Close)
	return rc
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = s
}

func (rc *receiver) acceptedTypes() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, p := range rc.accepted {
		out = append(out, p["type"].(string))
	}
	return out
}

func createWebhook(t *testing.T, b *apptest.Bundle, url string, events ...string) (string, string) {
	t.Helper()
	r := b.Do("POST", "/v1/webhooks", b.Admin(), map[string]any{"url": url, "events": events, "description": "test"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	secret := r.Body["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	return r.Body["webhook"].(map[string]any)["id"].(string), secret
}

func deliveries(t *testing.T, b *apptest.Bundle, id string) []map[string]any {
	t.Helper()
	r := b.Do("GET", "/v1/webhooks/"+id+"/deliveries", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var out []map[string]any
	for _, d := range r.Body["deliveries"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

// deadDelivery waits for the endpoint's one delivery to be dead and
// returns it.
func deadDelivery(t *testing.T, b *apptest.Bundle, id string) map[string]any {
	t.Helper()
	require.Eventually(t, func() bool {
		ds := deliveries(t, b, id)
		return len(ds) == 1 && ds[0]["status"] == "dead"
	}, 15*time.Second, 20*time.Millisecond)
	return deliveries(t, b, id)[0]
}

// TestWebhook_SignedAndOnceDespiteA500: every event of an approved and
// completed invocation reaches the receiver, signed, each once in effect
// although every first attempt is answered 500; the secret is shown once.
func TestWebhook_SignedAndOnceDespiteA500(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-hooks")
	rc := newReceiver(t, func(_ string, attempt int) int {
		if attempt == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	id, secret := createWebhook(t, b, rc.server.URL+"/hook", "action_approval_request", "action_approval_result", "action_completed")
	rc.setSecret(secret)
	r := b.Do("GET", "/v1/webhooks/"+id, b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.NotContains(t, string(r.Raw), secret)

	r = b.Invoke("send_message", message)
	inv := r.Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+inv+"/approve", b.Admin(), map[string]string{"mode": "once"}).Status)
	b.WaitStatus(inv, "completed", 10*time.Second)

	require.Eventually(t, func() bool { return len(rc.acceptedTypes()) == 3 }, 15*time.Second, 20*time.Millisecond)
	// Deliveries are independent: a retried one may arrive after a later
	// event's (event_id and timestamp say the order).
	require.ElementsMatch(t, []string{"action_approval_request", "action_approval_result", "action_completed"}, rc.acceptedTypes())
	rc.mu.Lock()
	for _, p := range rc.accepted {
		require.Equal(t, inv, p["data"].(map[string]any)["invocation_id"])
	}
	for msgID, n := range rc.attempts {
		require.Equal(t, 2, n, "one retry for %s, with the same webhook-id", msgID)
	}
	rc.mu.Unlock()

	require.Eventually(t, func() bool {
		ds := deliveries(t, b, id)
		for _, d := range ds {
			if d["status"] != "delivered" {
				return false
			}
		}
		return len(ds) == 3
	}, 10*time.Second, 20*time.Millisecond)
	d := deliveries(t, b, id)[0]
	require.EqualValues(t, 2, d["attempts"])
	require.EqualValues(t, 204, d["last_status_code"])
	require.Len(t, d["attempt_log"], 2)
	require.EqualValues(t, 500, d["attempt_log"].([]any)[0].(map[string]any)["status_code"])

	// A rotated secret signs what follows; the receiver knows only it.
	r = b.Do("POST", "/v1/webhooks/"+id+"/rotate-secret", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	rc.setSecret(r.Body["secret"].(string))
	r = b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status)
	require.Eventually(t, func() bool { return len(rc.acceptedTypes()) == 4 }, 15*time.Second, 20*time.Millisecond)
}

// TestWebhook_FailingEndpointDeadAndDisabled: a receiver that always fails
// ends with a dead delivery after the last attempt and is disabled, which
// the API shows; a 4xx stops at once.
func TestWebhook_FailingEndpointDeadAndDisabled(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Webhooks: webhook.Config{MaxAttempts: 3, DisableAfter: time.Millisecond}})
	b.StoreSlackToken("xoxb-hooks")
	failing := newReceiver(t, func(string, int) int { return http.StatusBadGateway })
	gone := newReceiver(t, func(string, int) int { return http.StatusGone })
	failingID, secret := createWebhook(t, b, failing.server.URL, "action_approval_request")
	failing.setSecret(secret)
	goneID, secret := createWebhook(t, b, gone.server.URL, "action_approval_request")
	gone.setSecret(secret)

	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)

	d := deadDelivery(t, b, failingID)
	require.EqualValues(t, 3, d["attempts"])
	require.EqualValues(t, 502, d["last_status_code"])
	require.Nil(t, d["next_attempt_at"])
	r := b.Do("GET", "/v1/webhooks/"+failingID, b.Admin(), nil)
	hook := r.Body["webhook"].(map[string]any)
	require.Equal(t, false, hook["enabled"])
	require.NotNil(t, hook["disabled_at"])
	require.Contains(t, hook["disabled_reason"], "failing since")

	require.EqualValues(t, 1, deadDelivery(t, b, goneID)["attempts"], "a 410 is not retried")

	// A disabled endpoint gets nothing more; enabling it again clears the
	// disabling.
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)
	r = b.Do("PATCH", "/v1/webhooks/"+failingID, b.Admin(), map[string]any{"enabled": true})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	hook = r.Body["webhook"].(map[string]any)
	require.Equal(t, true, hook["enabled"])
	require.Nil(t, hook["disabled_at"])
	require.Nil(t, hook["failing_since"])
}

// TestWebhook_PrivateAddressRefused: with private networks refused, a
// literal internal address is a 400, and a name that resolves to one is
// refused when dialing: the delivery is dead without a request.
func TestWebhook_PrivateAddressRefused(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{DenyPrivateNetworks: true})
	b.StoreSlackToken("xoxb-hooks")
	rc := newReceiver(t, func(string, int) int { return http.StatusOK })

	for _, url := range []string{rc.server.URL, "http://169.254.169.254/latest", "http://[::1]:8080/", "http://10.0.0.1/"} {
		r := b.Do("POST", "/v1/webhooks", b.Admin(), map[string]any{"url": url, "events": []string{"action_approval_request"}})
		require.Equal(t, http.StatusBadRequest, r.Status, url)
		require.Contains(t, string(r.Raw), `"field":"url"`)
	}
	port := rc.server.URL[strings.LastIndex(rc.server.URL, ":"):]
	id, _ := createWebhook(t, b, "http://localhost"+port+"/hook", "action_approval_request")
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)
	d := deadDelivery(t, b, id)
	require.Contains(t, d["last_error"], "internal range")
	require.EqualValues(t, 1, d["attempts"])
	rc.mu.Lock()
	require.Empty(t, rc.attempts)
	rc.mu.Unlock()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestWebhook_DisabledByAnAdminMidDelivery: an endpoint an admin disables
// while one of its deliveries is in flight is not reported as disabled by
// outboxd for failing (no WARN, no disabled_at), though that delivery
// then fails.
func TestWebhook_DisabledByAnAdminMidDelivery(t *testing.T) {
	t.Parallel()
	var logs apptest.Logs
	b := apptest.Start(t, &apptest.Options{Logs: &logs, Webhooks: webhook.Config{MaxAttempts: 1, DisableAfter: time.Millisecond}})
	b.StoreSlackToken("xoxb-hooks")
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	rc := newReceiver(t, func(string, int) int {
		arrived <- struct{}{}
		<-release
		return http.StatusBadGateway
	})
	id, secret := createWebhook(t, b, rc.server.URL, "action_approval_request")
	rc.setSecret(secret)
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("no delivery")
	}
	r := b.Do("PATCH", "/v1/webhooks/"+id, b.Admin(), map[string]any{"enabled": false})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	close(release)
	require.Eventually(t, func() bool {
		ds := deliveries(t, b, id)
		return len(ds) == 1 && ds[0]["status"] != "pending" && ds[0]["status"] != "retrying" && ds[0]["attempts"] == float64(1)
	}, 15*time.Second, 20*time.Millisecond)
	hook := b.Do("GET", "/v1/webhooks/"+id, b.Admin(), nil).Body["webhook"].(map[string]any)
	require.Equal(t, false, hook["enabled"])
	require.Nil(t, hook["disabled_at"], "the admin disabled it, not outboxd")
	require.NotContains(t, logs.String(), "disabled after failing too long")
}

// TestWebhook_EventNamedTwiceIsSubscribedOnce: events listing a kind twice
// keeps it once, on create and on update alike.
func TestWebhook_EventNamedTwiceIsSubscribedOnce(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	twice := []string{"action_completed", "action_approval_request", "action_completed"}
	r := b.Do("POST", "/v1/webhooks", b.Admin(), map[string]any{"url": "https://hooks.example.com/a", "events": twice})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	ep := r.Body["webhook"].(map[string]any)
	require.Equal(t, []any{"action_completed", "action_approval_request"}, ep["events"])

	r = b.Do("PATCH", "/v1/webhooks/"+ep["id"].(string), b.Admin(), map[string]any{"events": []string{"action_approval_result", "action_approval_result"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []any{"action_approval_result"}, r.Body["webhook"].(map[string]any)["events"])
}

// TestWebhook_ReceiverStatusTextRecordedSafely: the status text of a
// receiver's answer is its own to choose; one with a NUL, invalid UTF-8
// and 100 kB of text is recorded, short and readable, as that attempt's
// error, and its 400 stops the delivery at once. Recorded as it came,
// Postgres refused it: the delivery stayed pending with no attempt, and
// the 400 was retried.
// A redirect the client refuses (one turning the POST into a GET, as an
// http to https redirect with 301 does) would be refused on every attempt:
// the delivery is dead at once, not retried for the whole schedule.
func TestWebhook_RefusedRedirectIsNotRetried(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Webhooks: webhook.Config{MaxAttempts: 3}})
	b.StoreSlackToken("xoxb-hooks")
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Redirect(w, r, "/elsewhere", http.StatusMovedPermanently)
	}))
	t.Cleanup(srv.Close)
	id, _ := createWebhook(t, b, srv.URL+"/hook", "action_approval_request")
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)

	d := deadDelivery(t, b, id)
	require.EqualValues(t, 1, d["attempts"], "a refused redirect is not retried")
	require.Contains(t, d["last_error"], "redirect refused: it changes POST to GET")
	require.EqualValues(t, 1, requests.Load())
}

func TestWebhook_ReceiverStatusTextRecordedSafely(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Webhooks: webhook.Config{MaxAttempts: 3}})
	b.StoreSlackToken("xoxb-hooks")
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		requests++
		mu.Unlock()
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 400 Bad\x00Request\xff" + strings.Repeat("x", 100<<10) + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		_ = buf.Flush()
	}))
	t.Cleanup(srv.Close)
	id, _ := createWebhook(t, b, srv.URL, "action_approval_request")
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)

	d := deadDelivery(t, b, id)
	require.EqualValues(t, 1, d["attempts"], "a 400 is not retried")
	require.EqualValues(t, 400, d["last_status_code"])
	msg := d["last_error"].(string)
	require.True(t, strings.HasPrefix(msg, "HTTP 400 Bad"), msg)
	require.Less(t, len(msg), 1100)
	require.Len(t, d["attempt_log"], 1)
	mu.Lock()
	require.Equal(t, 1, requests)
	mu.Unlock()
}

// TestWebhook_FailureDoesNotQuoteTheURL: many receivers take their secret
// in the URL (a Slack incoming webhook's path, a ?token=); a failed
// attempt's error is recorded in the delivery, in River's job and in the
// worker's log without it. Go's client quoted the whole URL
// (`Post "http://…/hook/<secret>?token=<secret>": …`) in all three.
func TestWebhook_FailureDoesNotQuoteTheURL(t *testing.T) {
	t.Parallel()
	var logs apptest.Logs
	b := apptest.Start(t, &apptest.Options{Logs: &logs, DenyPrivateNetworks: true, Webhooks: webhook.Config{MaxAttempts: 1}})
	b.StoreSlackToken("xoxb-hooks")
	rc := newReceiver(t, func(string, int) int { return http.StatusOK })
	port := rc.server.URL[strings.LastIndex(rc.server.URL, ":"):]
	const pathSecret, querySecret = "B0PATHSECRET0xyz", "Q0QUERYSECRET0xyz"
	id, _ := createWebhook(t, b, "http://localhost"+port+"/services/T0/"+pathSecret+"?token="+querySecret, "action_approval_request")
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)

	d := deadDelivery(t, b, id)
	require.Contains(t, d["last_error"], "internal range", "the cause is still told")
	// River records the job's error once the attempt returned.
	var jobErrors string
	require.Eventually(t, func() bool {
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT COALESCE(string_agg(errors::text, ' '), '') FROM river_job WHERE kind = 'webhook_deliver'`).Scan(&jobErrors))
		return strings.Contains(jobErrors, "internal range")
	}, 10*time.Second, 20*time.Millisecond)
	raw, err := json.Marshal(d)
	require.NoError(t, err)
	for _, text := range []string{string(raw), jobErrors, logs.String()} {
		require.NotContains(t, text, pathSecret)
		require.NotContains(t, text, querySecret)
	}
}
