package worker_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// A Slack envelope that names the global "plugin" bucket
// (constraints.rate_bucket) and gets a 429 snoozes, but leaves the bucket
// every organization's plugins share undrained: before, one organization's
// Slack limit blocked every organization's plugin calls for its
// Retry-After. The envelope's own organization-scoped bucket is still
// drained by a 429 of its own source (TestExecute_RateLimitDrainsTheBucket).
func TestExecute_RateLimitLeavesAnotherSourcesGlobalBucket(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{SlackFunc: limitedOnce("600")})
	allowSlack(b)
	r := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
		"external_id": "global-bucket",
		"tool":        map[string]string{"source": "slack", "action": "send_message"},
		"args":        map[string]string{"channel": "C0123456789", "text": "hello"},
		"constraints": map[string]any{"rate_bucket": "plugin"},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["action_id"].(string)
	// The drain is decided before the invocation notes the 429.
	require.Eventually(t, func() bool {
		e, _ := b.Invocation(id)["error"].(string)
		return strings.Contains(e, "ratelimited")
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, string(invocation.StatusApproved), b.Invocation(id)["status"])

	other := b.Token(auth.Claims{Org: "org-other", Kind: auth.KindUser, Role: auth.RoleOwner})
	r = b.Do("GET", "/v1/rate-buckets", other, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	for _, bk := range r.Body["buckets"].([]any) {
		bucket := bk.(map[string]any)
		if bucket["name"] != "plugin" {
			continue
		}
		for _, st := range bucket["states"].([]any) {
			require.Nil(t, st.(map[string]any)["blocked_until"], "another organization's plugins are held by this one's Slack limit")
		}
	}
}

// limitedOnce is a loopback Slack that answers its first request 429 with
// Retry-After retryAfter (seconds), and every other one ok.
func limitedOnce(retryAfter string) http.HandlerFunc {
	var limited atomic.Bool
	limited.Store(true)
	return func(w http.ResponseWriter, r *http.Request) {
		if limited.CompareAndSwap(true, false) {
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		apptest.SlackOK(w, r)
	}
}
