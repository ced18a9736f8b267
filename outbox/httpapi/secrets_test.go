package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/apptest"
)

func TestCredentials_StoredSealedAndNeverShown(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	const token = "xoxb-1234567890-super-secret-credential"

	r := b.Do("PUT", "/v1/credentials/slack", b.Admin(), map[string]string{"token": token})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "slack", r.Body["credential"].(map[string]any)["integration"])
	require.Equal(t, "user-admin", r.Body["credential"].(map[string]any)["updated_by"])
	require.NotContains(t, string(r.Raw), token)

	list := b.Do("GET", "/v1/credentials", b.Admin(), nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	creds := list.Body["credentials"].([]any)
	require.Len(t, creds, 1)
	require.Equal(t, "slack", creds[0].(map[string]any)["integration"])
	require.NotContains(t, string(list.Raw), token)
	require.NotContains(t, string(list.Raw), "xoxb")

	var sealed []byte
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT sealed FROM credentials WHERE organization_id = $1 AND integration = 'slack'`, apptest.Org).Scan(&sealed))
	require.NotEmpty(t, sealed)
	require.False(t, bytes.Contains(sealed, []byte(token)), "credential stored in the clear")
	require.False(t, bytes.Contains(sealed, []byte("super-secret")), "credential stored in the clear")

	t.Run("ReplaceKeepsOneRow", func(t *testing.T) {
		b.StoreSlackToken(token + "-rotated")
		require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM credentials`))
		b.SetModes(map[string]string{"slack:send_message": "allow"})
		require.Equal(t, http.StatusOK, b.Invoke("send_message", message).Status)
		require.Equal(t, "Bearer "+token+"-rotated", b.Slack.Requests()[0].Authorization)
	})
	t.Run("UnknownIntegration", func(t *testing.T) {
		r := b.Do("PUT", "/v1/credentials/carrier-pigeon", b.Owner(), map[string]string{"token": "coo"})
		requireAPIError(t, r, http.StatusNotFound, "not_found")
	})
	t.Run("EmptyToken", func(t *testing.T) {
		for _, body := range []any{map[string]string{"token": ""}, map[string]string{"token": "   "}, map[string]string{}} {
			r := b.Do("PUT", "/v1/credentials/slack", b.Owner(), body)
			requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		}
		requireAPIError(t, b.Do("PUT", "/v1/credentials/slack", b.Owner(), `{"token":"x","extra":1}`), http.StatusBadRequest, "invalid_json")
		requireAPIError(t, b.Do("PUT", "/v1/credentials/slack", b.Owner(), `{"token":1}`), http.StatusBadRequest, "invalid_json")
	})
	require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM credentials`))
}

func TestSecrets_NeverStored(t *testing.T) {
	t.Parallel()
	const (
		slackToken = "xoxb-never-store-this-token-42"
		leaked     = "Bearer leaked-bearer-value"
		password   = "hunter2-correct-horse"
	)
	b := apptest.Start(t, &apptest.Options{SlackFunc: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"ts":"1.2","authorization":"`+leaked+`","nested":{"password":"`+password+`","list":[{"Api_Key":"k-123456"}]}}`)
	}})
	b.StoreSlackToken(slackToken)
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	t.Run("SecretParamIsRejected", func(t *testing.T) {
		r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "x", "token": "sk-live-123"})
		e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		require.Equal(t, []string{"token"}, fieldNames(t, e))
		require.NotContains(t, string(r.Raw), "sk-live-123")
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM action_invocations`))
	})

	r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "x"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "1.2", r.Body["invocation"].(map[string]any)["provider_ref"])
	id := r.Body["invocation"].(map[string]any)["id"].(string)
	result := r.Body["result"].(map[string]any)
	require.Equal(t, "[REDACTED]", result["authorization"])
	require.Equal(t, "[REDACTED]", result["nested"].(map[string]any)["password"])
	for _, raw := range []string{string(r.Raw), string(b.Do("GET", "/v1/invocations/"+id, b.Owner(), nil).Raw),
		string(b.Do("GET", "/v1/invocations", b.Owner(), nil).Raw)} {
		require.Contains(t, raw, "[REDACTED]")
		require.NotContains(t, raw, "leaked")
		require.NotContains(t, raw, password)
		require.NotContains(t, raw, "k-123456")
		require.NotContains(t, raw, slackToken)
	}

	// A failing answer that echoes the token: the error is stored redacted.
	b.Slack.SetHandler(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth","echo":"`+slackToken+`"}`)
	})
	r = b.Invoke("send_message", map[string]any{"channel": "C1", "text": "y"})
	require.Equal(t, http.StatusBadGateway, r.Status, string(r.Raw))
	require.NotContains(t, string(r.Raw), slackToken)

	// Deny reasons are free text a human typed; they are redacted too.
	b.SetModes(map[string]string{})
	pending := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "z"}).Body["invocation_id"].(string)
	dr := b.Do("POST", "/v1/invocations/"+pending+"/deny", b.Owner(), map[string]string{"reason": "rotate it first, password=" + password})
	require.Equal(t, http.StatusOK, dr.Status, string(dr.Raw))
	require.NotContains(t, string(dr.Raw), password)
	require.Equal(t, "rotate it first, password=[REDACTED]", dr.Body["invocation"].(map[string]any)["error"])

	var stored string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT result::text FROM action_invocations WHERE id = $1`, id).Scan(&stored))
	require.Contains(t, stored, "[REDACTED]")
	require.NotContains(t, stored, "leaked")

	rows, err := b.Pool.Query(context.Background(), `SELECT row_to_json(i)::text FROM action_invocations i`)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var row string
		require.NoError(t, rows.Scan(&row))
		n++
		for _, secret := range []string{slackToken, "never-store-this", "leaked", password, "k-123456", "sk-live-123"} {
			require.False(t, strings.Contains(row, secret), "action_invocations row holds %q: %s", secret, row)
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 3, n)

	// River's job rows hold only the invocation id, never params or tokens.
	jobs, err := b.Pool.Query(context.Background(), `SELECT row_to_json(j)::text FROM river_job j`)
	require.NoError(t, err)
	defer jobs.Close()
	for jobs.Next() {
		var row string
		require.NoError(t, jobs.Scan(&row))
		require.NotContains(t, row, slackToken)
		require.NotContains(t, row, "never-store-this")
	}
	require.NoError(t, jobs.Err())
}

// TestSecrets_EchoedCredentialIsScrubbed checks a credential the provider
// echoes back, under any key and inside free text, is stored and shown
// nowhere, even when it has no recognisable token format.
func TestSecrets_EchoedCredentialIsScrubbed(t *testing.T) {
	t.Parallel()
	const credential = "opaque-credential-8f3k2q"
	b := apptest.Start(t, &apptest.Options{SlackFunc: func(w http.ResponseWriter, r *http.Request) {
		used := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"ts":"1.2","note":"served for `+used+`","list":["`+used+`"]}`)
	}})
	b.StoreSlackToken(credential)
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	ok := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "hello"})
	require.Equal(t, http.StatusOK, ok.Status, string(ok.Raw))
	require.Contains(t, string(ok.Raw), "served for [REDACTED]")
	b.Slack.SetHandler(func(w http.ResponseWriter, r *http.Request) {
		used := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_arguments","detail":"request with `+used+` refused"}`)
	})
	failed := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "please fail"})
	require.Equal(t, http.StatusBadGateway, failed.Status, string(failed.Raw))

	for _, raw := range []string{string(ok.Raw), string(failed.Raw), string(b.Do("GET", "/v1/invocations", b.Owner(), nil).Raw),
		string(b.Do("GET", "/v1/dead-letters", b.Owner(), nil).Raw)} {
		require.NotContains(t, raw, credential)
	}
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM action_invocations i WHERE row_to_json(i)::text LIKE '%'||$1||'%'`, credential))
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM invocation_events e WHERE row_to_json(e)::text LIKE '%'||$1||'%'`, credential))
}
