package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/pglaunch"
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

// TestSecrets_PlantedSecretsAppearNowhere plants a secret in params, in a
// provider credential and in a connector's auth, runs invocations to
// completion (one through approval, one echoing the credential back, one
// failing with it), then looks for the secrets in a pg_dump of the
// database, in the debug-level logs and in every answer.
func TestSecrets_PlantedSecretsAppearNowhere(t *testing.T) {
	t.Parallel()
	const (
		paramSecret     = "pw-planted-5521x"
		credSecret      = "cred-planted-8842x"
		connectorSecret = "conn-planted-7713x"
	)
	var logs apptest.Logs
	srv := newMCPServer(t)
	srv.addTool("login", "Log in.", `{"type":"object","properties":{"user":{"type":"string"},"password":{"type":"string"}},"required":["user","password"]}`, nil)
	b := apptest.Start(t, &apptest.Options{Logs: &logs, SlackFunc: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"ts":"1.2","echo":"`+r.Header.Get("Authorization")+`"}`)
	}})
	b.StoreSlackToken(credSecret)
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	_, source := createConnector(t, b, srv, map[string]any{"type": "bearer", "secret": connectorSecret})

	var answers []string
	record := func(r *apptest.Response) *apptest.Response { answers = append(answers, string(r.Raw)); return r }
	login := record(invokeTool(b, source, "login", map[string]any{"user": "ada", "password": paramSecret}))
	require.Equal(t, http.StatusAccepted, login.Status, string(login.Raw))
	loginID := login.Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, record(b.Do("POST", "/v1/invocations/"+loginID+"/approve", b.Owner(), map[string]string{"mode": "once"})).Status)
	b.WaitStatus(loginID, invocation.StatusCompleted, 10*time.Second)
	require.JSONEq(t, `{"user":"ada","password":"`+paramSecret+`"}`, string(srv.toolCalls()[0].Arguments))

	sent := record(b.Invoke("send_message", map[string]any{"channel": "C1", "text": "hello"}))
	require.Equal(t, http.StatusOK, sent.Status, string(sent.Raw))
	b.Slack.SetHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth","detail":"`+r.Header.Get("Authorization")+` rejected"}`)
	})
	failed := record(b.Invoke("send_message", map[string]any{"channel": "C1", "text": "again"}))
	require.Equal(t, http.StatusBadGateway, failed.Status, string(failed.Raw))

	ids := []string{loginID, sent.Body["invocation"].(map[string]any)["id"].(string), failed.Body["invocation"].(map[string]any)["id"].(string)}
	for _, path := range []string{"/v1/invocations", "/v1/dead-letters", "/v1/connectors", "/v1/credentials"} {
		require.Equal(t, http.StatusOK, record(b.Do("GET", path, b.Owner(), nil)).Status, path)
	}
	for _, id := range ids {
		require.Equal(t, http.StatusOK, record(b.Do("GET", "/v1/invocations/"+id, b.Owner(), nil)).Status)
		require.Equal(t, http.StatusOK, record(b.Do("GET", "/v1/invocations/"+id+"/events", b.Owner(), nil)).Status)
	}

	// pg_dump sits next to the server binaries (PATH may hold links to
	// those alone).
	bin, err := pglaunch.FindBinDir()
	require.NoError(t, err)
	initdb, err := filepath.EvalSymlinks(filepath.Join(bin, "initdb"))
	require.NoError(t, err)
	dump, err := exec.Command(filepath.Join(filepath.Dir(initdb), "pg_dump"), "--dbname", b.DBURL).CombinedOutput()
	require.NoError(t, err, string(dump))
	require.Contains(t, string(dump), "invocation_events")
	require.Contains(t, string(dump), "[REDACTED]")
	require.Contains(t, logs.String(), "level=DEBUG")
	for _, secret := range []string{paramSecret, credSecret, connectorSecret} {
		require.NotContains(t, string(dump), secret, "pg_dump")
		require.NotContains(t, logs.String(), secret, "logs")
		for i, a := range answers {
			require.NotContains(t, a, secret, "answer %d", i)
		}
	}
}

// TestSecrets_EchoedParamsAreScrubbed: an MCP tool that answers with its
// arguments as text (raw, URL-escaped and base64) hands the exact values of
// its secret-named arguments back; they appear in no stored result, API
// answer, event or webhook, while what is not secret still reads.
func TestSecrets_EchoedParamsAreScrubbed(t *testing.T) {
	t.Parallel()
	const (
		password = "pw-echoed-9931x"
		apiKey   = "k3y+echoed/7720=="
	)
	srv := newMCPServer(t)
	var (
		hooksMu  sync.Mutex
		hooks    []string
		received json.RawMessage
	)
	srv.sdk.AddTool(&mcpsdk.Tool{
		Name: "whoami", Description: "Echo the login.", Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"user":{"type":"string"},"password":{"type":"string"},"apiKey":{"type":"string"}},"required":["user"]}`),
	}, func(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		args := string(req.Params.Arguments)
		hooksMu.Lock()
		received = req.Params.Arguments
		hooksMu.Unlock()
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
			&mcpsdk.TextContent{Text: "called whoami with " + args},
			&mcpsdk.TextContent{Text: "replay: /whoami?args=" + url.QueryEscape(args)},
			&mcpsdk.TextContent{Text: "encoded: " + base64.StdEncoding.EncodeToString(req.Params.Arguments)},
		}}, nil
	})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hooksMu.Lock()
		hooks = append(hooks, string(body))
		hooksMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	b := apptest.Start(t, nil)
	_, source := createConnector(t, b, srv, nil)
	r := b.Do("POST", "/v1/webhooks", b.Admin(), map[string]any{"url": hook.URL, "events": []string{"action_completed"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	events := b.Stream("/v1/events?after=0", b.Owner())

	r = invokeTool(b, source, "whoami", map[string]any{"user": "ada-lovelace", "password": password, "apiKey": apiKey})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	hooksMu.Lock()
	require.JSONEq(t, `{"user":"ada-lovelace","password":"`+password+`","apiKey":"`+apiKey+`"}`, string(received),
		"the tool gets the exact values")
	hooksMu.Unlock()
	id := r.Body["invocation"].(map[string]any)["id"].(string)
	require.Contains(t, string(r.Raw), "called whoami with")
	require.Contains(t, string(r.Raw), "ada-lovelace", "what is not secret still reads")

	answers := []string{string(r.Raw), string(b.Do("GET", "/v1/invocations/"+id, b.Owner(), nil).Raw),
		string(b.Do("GET", "/v1/invocations/"+id+"/events", b.Owner(), nil).Raw)}
	for {
		ev := events.Next(10 * time.Second)
		data, err := json.Marshal(ev.Data)
		require.NoError(t, err)
		answers = append(answers, string(data))
		if ev.Event == "action_completed" && ev.Data["invocation_id"] == id {
			break
		}
	}
	require.Eventually(t, func() bool {
		hooksMu.Lock()
		defer hooksMu.Unlock()
		return len(hooks) > 0
	}, 10*time.Second, 20*time.Millisecond, "the webhook is delivered")
	hooksMu.Lock()
	answers = append(answers, hooks...)
	hooksMu.Unlock()
	var stored string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT row_to_json(i)::text FROM action_invocations i WHERE id = $1`, id).Scan(&stored))
	answers = append(answers, stored)
	require.Contains(t, stored, "[REDACTED]")

	for i, a := range answers {
		for _, secret := range []string{password, apiKey, url.QueryEscape(password), url.QueryEscape(apiKey),
			base64.StdEncoding.EncodeToString([]byte(password))[:12], base64.StdEncoding.EncodeToString([]byte(apiKey))[:12]} {
			require.NotContains(t, a, secret, "answer %d: %s", i, a)
		}
	}
}
