package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// requireAPIError checks r is an error answer in the API's shape:
// {"error":{"code","message",...}} with the given status and code.
func requireAPIError(t *testing.T, r *apptest.Response, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Raw))
	require.Contains(t, r.Header.Get("Content-Type"), "application/json")
	e, ok := r.Body["error"].(map[string]any)
	require.True(t, ok, "no error object in %s", r.Raw)
	require.Equal(t, code, e["code"], string(r.Raw))
	require.NotEmpty(t, e["message"], string(r.Raw))
	return e
}

// invocationTotal is the org inbox's total for the default org.
func invocationTotal(t *testing.T, b *apptest.Bundle) int {
	t.Helper()
	r := b.Do("GET", "/v1/invocations", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return int(r.Body["total"].(float64))
}

// countRows counts rows in the database, bypassing the API.
func countRows(t *testing.T, b *apptest.Bundle, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// jobState is the state of the River job an invocation points at.
func jobState(t *testing.T, b *apptest.Bundle, invocationID string) string {
	t.Helper()
	var state string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT j.state::text FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, invocationID).Scan(&state))
	return state
}

// waitJobState polls until the invocation's River job is in state: River
// records a worker's outcome just after the worker's own transaction.
func waitJobState(t *testing.T, b *apptest.Bundle, invocationID, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := jobState(t, b, invocationID)
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job of invocation %s is %s, want %s", invocationID, got, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitJobsSettled polls until no execute job of the bundle can run: each is
// parked (pending, awaiting a human) or finished (completed, cancelled,
// discarded). A provider call a job makes comes before its job finishes,
// so a test that then finds no call knows none is coming.
func waitJobsSettled(t *testing.T, b *apptest.Bundle) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := countRows(t, b, `SELECT count(*) FROM river_job WHERE kind = 'execute_action'
			AND state NOT IN ('pending', 'completed', 'cancelled', 'discarded')`)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d execute jobs may still run", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// envelope is an envelope for a Slack message with the given external id;
// fields in extra are set on top.
func envelope(externalID string, extra map[string]any) map[string]any {
	env := map[string]any{
		"external_id": externalID,
		"tool":        map[string]any{"source": "slack", "action": "send_message"},
		"args":        map[string]any{"channel": "C0123456789", "text": "envelope " + externalID},
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// postEnvelope enqueues env with the default service token and requires
// status.
func postEnvelope(t *testing.T, b *apptest.Bundle, env map[string]any, status int) map[string]any {
	t.Helper()
	r := b.Do("POST", "/v1/envelopes", b.Service(), env)
	require.Equal(t, status, r.Status, string(r.Raw))
	return r.Body
}

// waitEnvelope polls an envelope until its result.status is want.
func waitEnvelope(t *testing.T, b *apptest.Bundle, id, want string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := b.Do("GET", "/v1/envelopes/"+id, b.Service(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		result := r.Body["result"].(map[string]any)
		if result["status"] == want {
			return r.Body
		}
		if time.Now().After(deadline) {
			t.Fatalf("envelope %s has result %v, want status %s", id, result, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fieldNames lists the field of each entry of an error's details.fields.
func fieldNames(t *testing.T, apiErr map[string]any) []string {
	t.Helper()
	details, ok := apiErr["details"].(map[string]any)
	require.True(t, ok, "error has no details: %v", apiErr)
	fields, ok := details["fields"].([]any)
	require.True(t, ok, "details has no fields: %v", details)
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		fe := f.(map[string]any)
		require.NotEmpty(t, fe["message"])
		names = append(names, fe["field"].(string))
	}
	return names
}
