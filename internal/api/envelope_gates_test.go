package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// A must_run_before RFC 3339 can write but that is year 0 or 10000 in
// UTC is refused with a 400 naming the field and stores nothing, alone or
// in a batch; before, year 0 was a 500 and year 10000 was stored, its
// answer empty, and the org's invocation list broken by it.
func TestEnvelope_MustRunBeforeOutOfRange(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	for _, at := range []string{"0000-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"} {
		r := b.Do("POST", "/v1/envelopes", b.Service(), envelope("mrb-"+at, map[string]any{"constraints": map[string]any{"must_run_before": at}}))
		require.Equal(t, []string{"constraints.must_run_before"}, fieldNames(t, requireAPIError(t, r, http.StatusBadRequest, "invalid_request")), at)

		r = b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": []any{
			envelope("mrb-batch-"+at, map[string]any{"constraints": map[string]any{"must_run_before": at}}),
		}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		item := r.Body["envelopes"].([]any)[0].(map[string]any)
		require.Equal(t, "invalid_request", item["error"].(map[string]any)["code"], at)
	}
	require.Zero(t, invocationTotal(t, b))

	// The extremes that fit are kept, answered and listed, in UTC.
	env := postEnvelope(t, b, envelope("mrb-last", map[string]any{"constraints": map[string]any{"must_run_before": "9999-12-31T23:59:59+14:00"}}), http.StatusCreated)
	require.Equal(t, "9999-12-31T09:59:59Z", env["constraints"].(map[string]any)["must_run_before"])
	require.Equal(t, 1, invocationTotal(t, b))
}

// external_id is limited to 255 characters, as the contract and the
// error say, not 255 bytes: 200 "é" (400 bytes) are taken, 256 are not.
func TestEnvelope_ExternalIDLengthInCharacters(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	long := strings.Repeat("é", 200)
	env := postEnvelope(t, b, envelope(long, nil), http.StatusCreated)
	require.Equal(t, long, env["external_id"])
	postEnvelope(t, b, envelope(long, nil), http.StatusOK)

	r := b.Do("POST", "/v1/envelopes", b.Service(), envelope(strings.Repeat("é", 256), nil))
	require.Equal(t, []string{"external_id"}, fieldNames(t, requireAPIError(t, r, http.StatusBadRequest, "invalid_request")))
	require.Equal(t, 1, invocationTotal(t, b))
}

// A pending envelope's approval window closes at its must_run_before when
// that comes first: an approval after the deadline would only have the
// envelope skipped. Before, the window stayed the full TTL and a late
// approval was taken.
func TestEnvelope_ApprovalWindowEndsAtTheDeadline(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	env := postEnvelope(t, b, envelope("window-deadline", map[string]any{
		"approval": "required", "constraints": map[string]any{"must_run_before": deadline.Format(time.RFC3339)},
	}), http.StatusCreated)
	inv := b.Invocation(env["action_id"].(string))
	require.Equal(t, "pending", inv["status"])
	expires, err := time.Parse(time.RFC3339Nano, inv["expires_at"].(string))
	require.NoError(t, err)
	require.True(t, expires.Equal(deadline), "expires_at %s, must_run_before %s", expires, deadline)

	// A deadline already passed when it was enqueued: the approval is
	// refused as expired, and nothing runs.
	env = postEnvelope(t, b, envelope("window-passed", map[string]any{
		"approval": "required", "constraints": map[string]any{"must_run_before": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)},
	}), http.StatusCreated)
	id := env["action_id"].(string)
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
	requireAPIError(t, r, http.StatusGone, "expired")
	require.Equal(t, "expired", b.Invocation(id)["status"])

	// A deadline after the TTL leaves the window as it was.
	far := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	env = postEnvelope(t, b, envelope("window-far", map[string]any{
		"approval": "required", "constraints": map[string]any{"must_run_before": far.Format(time.RFC3339)},
	}), http.StatusCreated)
	expires, err = time.Parse(time.RFC3339Nano, b.Invocation(env["action_id"].(string))["expires_at"].(string))
	require.NoError(t, err)
	require.True(t, expires.Before(far), "expires_at %s", expires)
	require.Empty(t, b.Slack.Requests())
}

// An external_id of spaces (or any blank text) names no envelope, and one
// with a control character is refused as an Idempotency-Key with one is:
// a 400 naming the field, alone or in a batch, that stores nothing.
// Before, both were taken.
func TestEnvelope_BlankOrControlExternalID(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	for _, id := range []string{" ", "   ", "\t\n", "\u00a0", "digest\n2026-11-21", "a\x01b", "\x7f"} {
		r := b.Do("POST", "/v1/envelopes", b.Service(), envelope(id, nil))
		require.Equal(t, []string{"external_id"}, fieldNames(t, requireAPIError(t, r, http.StatusBadRequest, "invalid_request")), "%q", id)

		r = b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": []any{envelope(id, nil)}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		item := r.Body["envelopes"].([]any)[0].(map[string]any)
		require.Equal(t, "invalid_request", item["error"].(map[string]any)["code"], "%q", id)
	}
	require.Zero(t, invocationTotal(t, b))

	// Spaces around an id are part of it, as before.
	postEnvelope(t, b, envelope(" padded ", nil), http.StatusCreated)
	require.Equal(t, 1, invocationTotal(t, b))
}
