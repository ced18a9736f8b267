package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// webhookSecretRow is what a rotation changes of an endpoint's row.
type webhookSecretRow struct {
	Sealed, Previous []byte
	Until            *time.Time
	UpdatedAt        time.Time
}

func readWebhookSecret(t *testing.T, b *apptest.Bundle, id string) webhookSecretRow {
	t.Helper()
	var row webhookSecretRow
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT secret_sealed, previous_secret_sealed, previous_until, updated_at FROM webhooks WHERE id = $1`, id).
		Scan(&row.Sealed, &row.Previous, &row.Until, &row.UpdatedAt))
	return row
}

// TestWebhookRotate_Overlap: rotate-secret takes an optional overlap, how
// long the replaced secret keeps signing. A bad one is a 400 naming
// overlap that changes nothing; another organization's endpoint is not
// found, and is left as it was; no body keeps the replaced secret 24h,
// "0s" not at all, and the answer and GET say until when.
func TestWebhookRotate_Overlap(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	owner, owner2 := b.Owner(), b.Token(authClaims("org-2"))
	create := func(token string) string {
		r := b.Do("POST", "/v1/webhooks", token, map[string]any{"url": "https://hooks.example.com/rotate", "events": []string{"action_completed"}})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		return r.Body["webhook"].(map[string]any)["id"].(string)
	}
	hook, hook2 := create(owner), create(owner2)
	rotate := func(token, id string, body any) *apptest.Response {
		return b.Do("POST", "/v1/webhooks/"+id+"/rotate-secret", token, body)
	}

	before := readWebhookSecret(t, b, hook)
	for _, overlap := range []any{"-1s", "169h", "168h1ns", "soon", "", "24", 24, true, map[string]any{}} {
		r := rotate(owner, hook, map[string]any{"overlap": overlap})
		require.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", overlap, r.Raw)
		e := r.Body["error"].(map[string]any)
		require.Equal(t, "invalid_request", e["code"], "%v", overlap)
		fields := e["details"].(map[string]any)["fields"].([]any)
		require.Equal(t, "overlap", fields[0].(map[string]any)["field"], "%v", overlap)
	}
	require.Equal(t, before, readWebhookSecret(t, b, hook), "a refused rotation changes nothing")

	// Another organization's endpoint, with a good overlap.
	before2 := readWebhookSecret(t, b, hook2)
	r := rotate(owner, hook2, map[string]any{"overlap": "1h"})
	require.Equal(t, http.StatusNotFound, r.Status, string(r.Raw))
	require.Equal(t, before2, readWebhookSecret(t, b, hook2))

	// No body: the replaced secret signs for 24h, by Postgres's clock.
	r = rotate(owner, hook, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	after := readWebhookSecret(t, b, hook)
	require.Equal(t, before.Sealed, after.Previous, "the replaced secret is kept sealed as it was")
	require.NotEqual(t, before.Sealed, after.Sealed)
	require.NotNil(t, after.Until)
	require.WithinDuration(t, after.UpdatedAt.Add(24*time.Hour), *after.Until, time.Millisecond)
	until, err := time.Parse(time.RFC3339Nano, r.Body["previous_valid_until"].(string))
	require.NoError(t, err)
	require.True(t, until.Equal(*after.Until), "%s, stored %s", until, after.Until)
	require.Equal(t, r.Body["previous_valid_until"], r.Body["webhook"].(map[string]any)["previous_valid_until"])
	g := b.Do("GET", "/v1/webhooks/"+hook, owner, nil)
	require.Equal(t, r.Body["previous_valid_until"], g.Body["webhook"].(map[string]any)["previous_valid_until"])

	// An overlap of its own.
	r = rotate(owner, hook, map[string]any{"overlap": "90m"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	again := readWebhookSecret(t, b, hook)
	require.Equal(t, after.Sealed, again.Previous, "the secret replaced now; the one before it signs no more")
	require.WithinDuration(t, again.UpdatedAt.Add(90*time.Minute), *again.Until, time.Millisecond)

	// "0s": the new secret alone.
	r = rotate(owner, hook, map[string]any{"overlap": "0s"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, r.Body, "previous_valid_until")
	require.Nil(t, r.Body["previous_valid_until"])
	require.Nil(t, r.Body["webhook"].(map[string]any)["previous_valid_until"])
	none := readWebhookSecret(t, b, hook)
	require.Nil(t, none.Previous)
	require.Nil(t, none.Until)
	g = b.Do("GET", "/v1/webhooks/"+hook, owner, nil)
	require.Nil(t, g.Body["webhook"].(map[string]any)["previous_valid_until"])
}
