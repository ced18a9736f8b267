package worker_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/worker"
)

// enqueue posts an allow-mode envelope and returns its invocation id.
func enqueue(t *testing.T, b *apptest.Bundle, externalID string) string {
	t.Helper()
	r := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
		"external_id": externalID,
		"tool":        map[string]string{"source": "slack", "action": "send_message"},
		"args":        map[string]string{"channel": "C0123456789", "text": "hello"},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	return r.Body["action_id"].(string)
}

func allowSlack(b *apptest.Bundle) {
	b.StoreSlackToken("xoxb-worker-token")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
}

func jobRow(t *testing.T, b *apptest.Bundle, id string) (state string, attempt int) {
	t.Helper()
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT j.state::text, j.attempt FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, id).Scan(&state, &attempt))
	return state, attempt
}

func TestExecute_StoppedMidCallIsRetriedWithSameKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	// The first process's Slack hangs until the caller gives up.
	hanging := make(chan struct{})
	first := apptest.Start(t, &apptest.Options{
		ShutdownTimeout: 300 * time.Millisecond,
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			close(hanging)
			<-r.Context().Done()
		},
	})
	allowSlack(first)
	id := enqueue(t, first, "hang-1")
	select {
	case <-hanging:
	case <-time.After(10 * time.Second):
		t.Fatal("provider never called")
	}
	first.Stop() // the job's context is cancelled mid-call

	second := apptest.Start(t, &apptest.Options{DatabaseURL: first.DBURL, SecretsKey: first.Config.SecretsKey})
	inv := second.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)

	firstReqs, secondReqs := first.Slack.Requests(), second.Slack.Posts()
	require.Len(t, firstReqs, 1)
	require.Len(t, secondReqs, 1, "completes once")
	require.Equal(t, "/conversations.history", second.Slack.Requests()[0].Path, "the retry looks for the first attempt's message first")
	require.Equal(t, id, firstReqs[0].IdempotencyKey)
	require.Equal(t, id, secondReqs[0].IdempotencyKey, "the retry carries the same idempotency key")
	require.Equal(t, float64(2), inv["attempt"])
	// River completes the job once the worker's own transaction is done.
	require.Eventually(t, func() bool { s, _ := jobRow(t, second, id); return s == "completed" }, 5*time.Second, 20*time.Millisecond)
}

func TestExecute_RetryableErrorsExhaustAttempts(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{
		Worker: worker.Config{MaxAttempts: 3, RetryBaseDelay: 50 * time.Millisecond},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
		},
	})
	allowSlack(b)
	id := enqueue(t, b, "flaky-1")

	inv := b.WaitStatus(id, invocation.StatusFailed, 20*time.Second)
	require.Contains(t, inv["error"], "502")
	require.Len(t, b.Slack.Requests(), 3)
	require.Eventually(t, func() bool {
		state, attempt := jobRow(t, b, id)
		return state == "discarded" && attempt == 3
	}, 10*time.Second, 50*time.Millisecond, "the dead letter is River's discarded job")
}

func TestExecute_RateLimitedSnoozesWithoutBurningAttempts(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	b := apptest.Start(t, &apptest.Options{
		Worker: worker.Config{MaxAttempts: 1},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) <= 2 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			apptest.SlackOK(w, r)
		},
	})
	allowSlack(b)
	id := enqueue(t, b, "limited-1")

	// Two 429s with a single allowed attempt: only snoozing can get it done.
	inv := b.WaitStatus(id, invocation.StatusCompleted, 20*time.Second)
	// The post, and after each snooze the post again: Slack processed
	// neither rate-limited one, so there is nothing to look for.
	paths := []string{}
	for _, r := range b.Slack.Requests() {
		paths = append(paths, r.Path)
	}
	require.Equal(t, []string{"/chat.postMessage", "/chat.postMessage", "/chat.postMessage"}, paths)
	require.Equal(t, float64(1), inv["attempt"])
	_, attempt := jobRow(t, b, id)
	require.Equal(t, 1, attempt)
}

func TestExecute_NonRetryableFailsAtOnce(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{SlackFunc: apptest.SlackError("channel_not_found")})
	allowSlack(b)
	id := enqueue(t, b, "bad-channel")

	inv := b.WaitStatus(id, invocation.StatusFailed, 10*time.Second)
	require.Contains(t, inv["error"], "channel_not_found")
	require.Len(t, b.Slack.Requests(), 1)
	require.Eventually(t, func() bool { s, _ := jobRow(t, b, id); return s == "cancelled" }, 5*time.Second, 50*time.Millisecond)
}

func TestExecute_TokenNeverStored(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{SlackFunc: func(w http.ResponseWriter, r *http.Request) {
		// A provider that echoes the token in its error.
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "bad token "+r.Header.Get("Authorization"))
	}})
	allowSlack(b)
	id := enqueue(t, b, "echo-1")
	b.WaitStatus(id, invocation.StatusFailed, 10*time.Second)

	var row string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT row_to_json(i)::text FROM action_invocations i WHERE id = $1`, id).Scan(&row))
	require.NotContains(t, row, "xoxb-worker-token")
	var jobErrors string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT coalesce(errors::text, '') FROM river_job WHERE kind = 'execute_action'`).Scan(&jobErrors))
	require.NotContains(t, jobErrors, "xoxb-worker-token")
}

func TestExecute_RetryPolicyPerSourceAndEnvelope(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{
		Outbox: outbox.Config{RetryBySource: map[string]invocation.Retry{"slack": {MaxAttempts: 2, BaseDelay: 50 * time.Millisecond}}},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		},
	})
	allowSlack(b)

	bySource := enqueue(t, b, "by-source")
	b.WaitStatus(bySource, invocation.StatusFailed, 20*time.Second)
	_, attempt := jobRow(t, b, bySource)
	require.Equal(t, 2, attempt, "the source's max_attempts, not the worker's 5")

	r := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
		"external_id": "by-envelope",
		"tool":        map[string]string{"source": "slack", "action": "send_message"},
		"args":        map[string]string{"channel": "C0123456789", "text": "once"},
		"constraints": map[string]any{"retry": map[string]any{"max_attempts": 1}},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	byEnvelope := r.Body["action_id"].(string)
	b.WaitStatus(byEnvelope, invocation.StatusFailed, 20*time.Second)
	_, attempt = jobRow(t, b, byEnvelope)
	require.Equal(t, 1, attempt, "the envelope's max_attempts wins")
	require.Len(t, b.Slack.Requests(), 3)

	r = b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
		"external_id": "bad-retry",
		"tool":        map[string]string{"source": "slack", "action": "send_message"},
		"args":        map[string]string{"channel": "C0123456789", "text": "x"},
		"constraints": map[string]any{"retry": map[string]any{"base_delay": "soon"}},
	})
	require.Equal(t, http.StatusBadRequest, r.Status)
}

// TestExecute_LookupRateLimitKeepsTheBucket: a retry whose look-up for
// the earlier attempt's message Slack rate-limits waits as asked, but
// the limit is history's, not posting's: the organization's other posts
// go on meanwhile.
func TestExecute_LookupRateLimitKeepsTheBucket(t *testing.T) {
	t.Parallel()
	var failedFirst atomic.Bool
	var lookups atomic.Int32
	b := apptest.Start(t, &apptest.Options{
		Outbox: outbox.Config{RetryBySource: map[string]invocation.Retry{"slack": {MaxAttempts: 5, BaseDelay: 50 * time.Millisecond}}},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/conversations.history"):
				lookups.Add(1)
				w.Header().Set("Retry-After", "60")
				w.WriteHeader(http.StatusTooManyRequests)
			case failedFirst.CompareAndSwap(false, true):
				w.WriteHeader(http.StatusServiceUnavailable) // the answer of a post that may have landed
			default:
				apptest.SlackOK(w, r)
			}
		},
	})
	allowSlack(b)
	first := enqueue(t, b, "lookup-1")
	require.Eventually(t, func() bool { return lookups.Load() > 0 }, 15*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		e, _ := b.Invocation(first)["error"].(string)
		return strings.Contains(e, "conversations.history")
	}, 10*time.Second, 10*time.Millisecond)

	// Drained for the 60 s Slack asked, the bucket would hold this post.
	second := enqueue(t, b, "lookup-2")
	b.WaitStatus(second, invocation.StatusCompleted, 15*time.Second)
	require.NotEqual(t, "completed", b.Invocation(first)["status"], "the first waits for history's limit")
	require.Len(t, b.Slack.Posts(), 2, "the first's lost post and the second's")
}

// TestExecute_RateLimitedPostIsNotLookedFor: Slack does not process a
// post it rate-limits, so the retry posts without first looking for it in
// the channel's history, whose own limit (one call a minute for an app
// outside the Slack Marketplace) would otherwise hold every rate-limited
// post. A post whose answer was lost is looked for, once; a rate limit
// after that look-up is not looked for again.
func TestExecute_RateLimitedPostIsNotLookedFor(t *testing.T) {
	t.Parallel()
	var lookups atomic.Int32
	answers := make(chan int, 4) // the statuses of the next posts; ok when empty
	b := apptest.Start(t, &apptest.Options{
		Outbox: outbox.Config{RetryBySource: map[string]invocation.Retry{"slack": {MaxAttempts: 5, BaseDelay: 50 * time.Millisecond}}},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/conversations.history") {
				if lookups.Add(1) > 1 { // a second look-up holds the post for a minute
					w.Header().Set("Retry-After", "60")
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				apptest.SlackOK(w, r)
				return
			}
			select {
			case status := <-answers:
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(status)
			default:
				apptest.SlackOK(w, r)
			}
		},
	})
	allowSlack(b)

	answers <- http.StatusTooManyRequests
	limited := enqueue(t, b, "not-done-1")
	b.WaitStatus(limited, invocation.StatusCompleted, 15*time.Second)
	require.Zero(t, lookups.Load(), "a post Slack refused is not looked for")
	require.Len(t, b.Slack.Posts(), 2)

	answers <- http.StatusServiceUnavailable // the answer of a post that may have landed
	answers <- http.StatusTooManyRequests
	lost := enqueue(t, b, "not-done-2")
	b.WaitStatus(lost, invocation.StatusCompleted, 15*time.Second)
	require.Equal(t, int32(1), lookups.Load(), "looked for once: before the post Slack then refused")
	require.Len(t, b.Slack.Posts(), 5)
}

func TestExecute_RateLimitDrainsTheBucket(t *testing.T) {
	t.Parallel()
	var limited atomic.Bool
	limited.Store(true)
	var arrivals sync.Map
	b := apptest.Start(t, &apptest.Options{
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			arrivals.Store(r.Header.Get("X-Outboxd-Idempotency-Key")+time.Now().String(), time.Now())
			if limited.CompareAndSwap(true, false) {
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			apptest.SlackOK(w, r)
		},
	})
	allowSlack(b)
	first := enqueue(t, b, "drain-1")
	limitedAt := time.Now()
	// The drain is recorded before the invocation notes the 429.
	require.Eventually(t, func() bool {
		e, _ := b.Invocation(first)["error"].(string)
		return strings.Contains(e, "ratelimited")
	}, 10*time.Second, 10*time.Millisecond)

	// Another job of the same bucket must not reach Slack while it is drained.
	second := enqueue(t, b, "drain-2")
	b.WaitStatus(second, invocation.StatusCompleted, 15*time.Second)
	b.WaitStatus(first, invocation.StatusCompleted, 15*time.Second)
	require.Len(t, b.Slack.Posts(), 3)
	var secondAt time.Time
	arrivals.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), second) {
			secondAt = v.(time.Time)
		}
		return true
	})
	require.GreaterOrEqual(t, secondAt.Sub(limitedAt), 1500*time.Millisecond, "the 429 drained the bucket for everyone")

	r := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
		"external_id": "unknown-bucket",
		"tool":        map[string]string{"source": "slack", "action": "send_message"},
		"args":        map[string]string{"channel": "C0123456789", "text": "x"},
		"constraints": map[string]any{"rate_bucket": "no.such.bucket"},
	})
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Contains(t, string(r.Raw), "unknown rate bucket")
}

func TestExecute_ProviderWaitsAreBounded(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{
		Worker: worker.Config{MaxAttempts: 1, MaxProviderWaits: 2},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		},
	})
	allowSlack(b)
	id := enqueue(t, b, "always-limited")

	// Two snoozes, then the third 429 spends the only attempt.
	inv := b.WaitStatus(id, invocation.StatusFailed, 20*time.Second)
	require.Equal(t, float64(2), inv["provider_waits"])
	require.Len(t, b.Slack.Requests(), 3)
}

// TestExecute_ChangedCredentialIsUsedByTheNextJob checks the worker's cache
// of decrypted credentials never serves a credential that was replaced.
func TestExecute_ChangedCredentialIsUsedByTheNextJob(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	allowSlack(b)
	b.WaitStatus(enqueue(t, b, "cred-1"), invocation.StatusCompleted, 10*time.Second)
	b.StoreSlackToken("xoxb-rotated-token")
	b.WaitStatus(enqueue(t, b, "cred-2"), invocation.StatusCompleted, 10*time.Second)
	reqs := b.Slack.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, "Bearer xoxb-worker-token", reqs[0].Authorization)
	require.Equal(t, "Bearer xoxb-rotated-token", reqs[1].Authorization)
}

// TestExecute_TerminalFailuresAreLogged checks a failure the worker decides
// without retrying leaves one log line with the invocation and the reason.
func TestExecute_TerminalFailuresAreLogged(t *testing.T) {
	t.Parallel()
	var logs apptest.Logs
	b := apptest.Start(t, &apptest.Options{Logs: &logs})
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	id := enqueue(t, b, "no-credential")
	inv := b.WaitStatus(id, invocation.StatusFailed, 10*time.Second)
	require.Contains(t, inv["error"], "no credential")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "invocation_id="+id) }, 5*time.Second, 20*time.Millisecond)
	var lines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `msg="invocation failed"`) && strings.Contains(line, "invocation_id="+id) {
			lines = append(lines, line)
		}
	}
	require.Len(t, lines, 1, logs.String())
	require.Contains(t, lines[0], "code=credential_missing")
	require.Contains(t, lines[0], "level=WARN")
}
