package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/sealed/sealedstore"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// hookReceiver is a loopback webhook endpoint that counts the deliveries
// whose signature verifies with the secret it was given.
type hookReceiver struct {
	server *httptest.Server

	mu       sync.Mutex
	secret   string
	verified int
	refused  int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(h.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			h.refused++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.verified++
	}))
	t.Cleanup(h.server.Close)
	return h
}

func (h *hookReceiver) counts() (verified, refused int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.verified, h.refused
}

// sealBeforeKeyrings seals as outboxd did before keyrings (nonce,
// ciphertext and tag, no key id): what a database upgraded to this version
// holds.
func sealBeforeKeyrings(t *testing.T, keyBase64 string, plain, additional []byte) []byte {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(keyBase64)
	require.NoError(t, err)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(t, err)
	nonce := make([]byte, aead.NonceSize())
	_, err = rand.Read(nonce)
	require.NoError(t, err)
	return aead.Seal(nonce, nonce, plain, additional)
}

// TestSecrets_RotateWhileServing upgrades a database whose Slack credential
// was sealed before keyrings, serves with one key, then with a new primary
// key and the old one listed, rotates in a separate process while
// invocations run, rotates again (nothing to do), and serves with the new
// key alone: the credential, the webhook's signing secret and a pending
// invocation's sealed params all still open, and nothing failed.
func TestSecrets_RotateWhileServing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
	dbURL := pgtest.URL(t)
	slack := apptest.NewSlack(t, nil)
	hooks := newHookReceiver(t)
	env := append(baseEnv(dbURL, slack.Server.URL), "OUTBOXD_CONNECTORS_ALLOW_PRIVATE_NETWORKS=true", "OUTBOXD_WEBHOOKS_RETRY_BASE_DELAY=100ms")
	withKeys := func(key, keys string) []string {
		return append(append([]string(nil), env...), "OUTBOXD_SECRETS_KEY="+key, "OUTBOXD_SECRETS_KEYS="+keys)
	}

	// The database of an outboxd from before keyrings.
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO credentials (organization_id, integration, user_id, sealed, token_kind, created_by) VALUES ($1, 'slack', '', $2, '', 'old')`,
		apptest.Org, sealBeforeKeyrings(t, oldKey, []byte("xoxb-from-last-year"), credentialstore.Additional(apptest.Org, "slack", "")))
	require.NoError(t, err)

	serve := func(env []string) (*process, *apptest.Bundle) {
		addr := freeAddr(t)
		p := outboxd(t, env, "serve", "--http-addr", addr)
		waitReady(t, addr, p)
		return p, &apptest.Bundle{T: t, URL: "http://" + addr, Secret: "separate-process-secret-0123"}
	}
	send := func(b *apptest.Bundle, text string) {
		t.Helper()
		r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": text})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, "completed", r.Body["invocation"].(map[string]any)["status"], string(r.Raw))
	}
	lastPost := func() apptest.SlackRequest {
		posts := slack.Posts()
		require.NotEmpty(t, posts)
		return posts[len(posts)-1]
	}

	// Upgraded, with secrets.key as before: the old credential opens.
	p, b := serve(withKeys(oldKey, ""))
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	send(b, "after the upgrade")
	require.Equal(t, "Bearer xoxb-from-last-year", lastPost().Authorization)
	r := b.Do("POST", "/v1/webhooks", b.Owner(), map[string]any{"url": hooks.server.URL, "events": []string{"action_completed"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	hooks.mu.Lock()
	hooks.secret = r.Body["secret"].(string)
	hooks.mu.Unlock()
	// Rotated, its first secret still signing (the receiver keeps it):
	// sealed with the old key too, in webhooks.previous_secret_sealed.
	r = b.Do("POST", "/v1/webhooks/"+r.Body["webhook"].(map[string]any)["id"].(string)+"/rotate-secret", b.Owner(), map[string]any{"overlap": "168h"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	// A pending invocation whose exact params wait sealed.
	b.SetModes(map[string]string{"slack:send_message": "require_approval"})
	r = b.Invoke("send_message", map[string]any{"channel": "C1", "text": "deploy with password=hunter2-sealed"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	pending := r.Body["invocation_id"].(string)
	var sealedParams int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM action_invocations WHERE params_sealed IS NOT NULL`).Scan(&sealedParams))
	require.Equal(t, 1, sealedParams)
	p.stop(t)

	// The new key first, the old one still listed; one line in the
	// environment.
	during := fmt.Sprintf("2026-11:%s, %s:%s", newKey, secretbox.DefaultKeyID, oldKey)
	p, b = serve(withKeys("", during))
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	send(b, "with both keys")
	require.Equal(t, "Bearer xoxb-from-last-year", lastPost().Authorization)

	code, out := run(t, withKeys("", during), "secrets", "status")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `4 sealed values remain on other keys \(credentials.sealed 1, webhooks.secret_sealed 1, webhooks.previous_secret_sealed 1, action_invocations.params_sealed 1; by key: "default" 4\)`, out)

	// Rotate while invocations run; they all complete.
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": fmt.Sprintf("during the rotation %d password=pw-%d", n, n)})
			if r.Status != http.StatusOK || r.Body["invocation"].(map[string]any)["status"] != "completed" {
				t.Errorf("an invocation during the rotation: %d %s", r.Status, r.Raw)
			}
			n++
		}
	}()
	// Let the daemon write while the rotation reads.
	require.Eventually(t, func() bool { return len(slack.Posts()) >= 6 }, 20*time.Second, 10*time.Millisecond)
	code, out = run(t, withKeys("", during), "secrets", "rotate", "--batch", "1")
	close(stop)
	require.Positive(t, <-done)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `re-sealing with key "2026-11" (secrets.keys: 2026-11, default)`)
	for _, c := range sealedstore.Columns {
		require.Regexp(t, regexp.QuoteMeta(c.Name)+`: \d+ sealed, [1-9]\d* re-sealed`, out, "every column is rotated")
	}
	require.Contains(t, out, `0 sealed values remain on other keys: every stored secret is sealed with "2026-11", the first key; the other keys (default) seal nothing and can be removed from secrets.keys`)
	require.NotContains(t, out, oldKey)
	require.NotContains(t, out, newKey)
	require.Contains(t, out, `recorded "secrets.rotate" in the audit trail of 1 organizations`)

	// The rotation is in the organization's audit trail: the operator, from
	// the host, the key ids and the counts by kind, never a key.
	rotations := func() []any {
		t.Helper()
		r := b.Do("GET", "/v1/audit?action=secrets.rotate", b.Owner(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.NotContains(t, string(r.Raw), oldKey)
		require.NotContains(t, string(r.Raw), newKey)
		return r.Body["entries"].([]any)
	}
	entries := rotations()
	require.Len(t, entries, 1)
	entry := entries[0].(map[string]any)
	actor := entry["actor"].(map[string]any)
	require.Equal(t, "operator", actor["kind"])
	require.NotEmpty(t, actor["subject"])
	require.Regexp(t, `^host:.+`, actor["client_addr"])
	require.Equal(t, "secrets_key", entry["target_type"])
	require.Equal(t, "2026-11", entry["target_id"])
	require.Equal(t, map[string]any{"key_ids": map[string]any{"default": entry["after"].(map[string]any)["resealed_total"]}}, entry["before"])
	after := entry["after"].(map[string]any)
	resealed := after["resealed"].(map[string]any)
	require.EqualValues(t, 1, resealed["credentials"], "the Slack credential")
	require.EqualValues(t, 2, resealed["webhooks"], "the webhook's secret and the one it replaced")
	require.GreaterOrEqual(t, resealed["invocation_params"], float64(1))
	require.Equal(t, "2026-11", after["key_id"])
	require.Equal(t, true, after["complete"])

	code, out = run(t, withKeys("", during), "secrets", "rotate")
	require.Equal(t, 0, code, out)
	for _, c := range sealedstore.Columns {
		require.Regexp(t, regexp.QuoteMeta(c.Name)+`: \d+ sealed, 0 re-sealed`, out, "a second run re-seals nothing")
	}
	require.NotContains(t, out, "recorded")
	require.Len(t, rotations(), 1, "a run that re-seals nothing records nothing")
	send(b, "after the rotation")
	p.stop(t)

	// The old key alone no longer opens what is stored.
	code, out = run(t, withKeys(oldKey, ""), "serve", "--http-addr", freeAddr(t))
	require.Equal(t, 1, code, out)
	require.Contains(t, out, `sealed with key id "2026-11"`)

	// The new key alone opens everything.
	_, b = serve(withKeys("", "2026-11:"+newKey))
	before, _ := hooks.counts()
	send(b, "with the new key alone")
	require.Equal(t, "Bearer xoxb-from-last-year", lastPost().Authorization)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+pending+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	b.WaitStatus(pending, invocation.StatusCompleted, 20*time.Second)
	require.Equal(t, "deploy with password=hunter2-sealed", lastPost().Body["text"], "the sealed params opened")
	require.Eventually(t, func() bool {
		verified, _ := hooks.counts()
		return verified >= before+2
	}, 20*time.Second, 20*time.Millisecond, "the webhook's previous secret, re-sealed, still signs deliveries")
	_, refused := hooks.counts()
	require.Zero(t, refused)
}

// TestSecrets_UnreadableValuesExitOne: a value no configured key opens is
// reported, left as it is, and makes the commands exit 1; with one key
// there is nothing to remove.
func TestSecrets_UnreadableValuesExitOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := secretbox.NewKey()
	dbURL := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	own, err := secretbox.New(key)
	require.NoError(t, err)
	lost, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	for integration, box := range map[string]*secretbox.Box{"linear": own, "github": lost} {
		_, err = conn.Exec(ctx, `INSERT INTO credentials (organization_id, integration, user_id, sealed, token_kind, created_by) VALUES ('o', $1, '', $2, '', 'x')`,
			integration, box.Seal([]byte("tok"), credentialstore.Additional("o", integration, "")))
		require.NoError(t, err)
	}
	env := []string{"DATABASE_URL=" + dbURL, "OUTBOXD_SECRETS_KEY=" + key, "OUTBOXD_SECRETS_KEYS="}

	code, out := run(t, env, "secrets", "rotate")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "credentials.sealed: 2 sealed, 0 re-sealed, 0 changed meanwhile (left as written), 1 unreadable")
	require.Contains(t, out, `0 sealed values remain on other keys: every stored secret is sealed with "default".`)
	require.Contains(t, out, "1 sealed values open with no key of secrets.keys (credentials.sealed 1)")

	code, out = run(t, env, "secrets", "status")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "1 sealed values open with no key of secrets.keys")

	code, out = run(t, []string{"DATABASE_URL=" + dbURL, "OUTBOXD_SECRETS_KEY=", "OUTBOXD_SECRETS_KEYS="}, "secrets", "status")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "secrets.key is required")
}

// TestServe_WarnsOfSecretsNoKeyOpens: a key removed from secrets.keys
// while values it sealed remain (the newest credential sealed with the
// key kept, so the start is not refused) is said at start, per kind of
// secret with how many and the key id, never a value or a key; with the
// key listed nothing is said.
func TestServe_WarnsOfSecretsNoKeyOpens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
	old, err := secretbox.NewRing([]secretbox.Key{{ID: "old", Secret: oldKey}})
	require.NoError(t, err)
	current, err := secretbox.NewRing([]secretbox.Key{{ID: "new", Secret: newKey}})
	require.NoError(t, err)
	for integration, box := range map[string]*secretbox.Box{"github": old, "linear": current} {
		_, err = conn.Exec(ctx, `INSERT INTO credentials (organization_id, integration, user_id, sealed, token_kind, created_by, updated_at)
VALUES ('o', $1, '', $2, '', 'x', now() - CASE WHEN $1 = 'github' THEN interval '1 day' ELSE interval '0' END)`,
			integration, box.Seal([]byte("plain-"+integration), credentialstore.Additional("o", integration, "")))
		require.NoError(t, err)
	}
	hook := uuid.New()
	_, err = conn.Exec(ctx, `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed) VALUES ($1, 'o', 'https://hooks.example/x', '{}', $2)`,
		hook, old.Seal([]byte("plain-webhook"), hook[:]))
	require.NoError(t, err)
	for status, n := range map[string]int{"pending": 2, "completed": 1} {
		for range n {
			inv := uuid.New()
			_, err = conn.Exec(ctx, `INSERT INTO action_invocations (id, organization_id, requested_by, origin, integration, action, risk_level,
    mode, mode_source, params, params_hash, status, params_sealed)
VALUES ($1, 'o', 'test', 'invoke', 'demo', 'act', 'low', 'allow', 'default', '{}', 'h', $2, $3)`, inv, status, old.Seal([]byte("plain-params"), inv[:]))
			require.NoError(t, err)
		}
	}

	serve := func(keys string) string {
		env := append(baseEnv(dbURL, "http://127.0.0.1:1"), "OUTBOXD_SECRETS_KEY=", "OUTBOXD_SECRETS_KEYS="+keys)
		addr := freeAddr(t)
		p := outboxd(t, env, "serve", "--http-addr", addr)
		waitReady(t, addr, p)
		p.stop(t)
		return p.output.String()
	}
	out := serve("new:" + newKey + ",old:" + oldKey)
	require.NotContains(t, out, "do not open")

	out = serve("new:" + newKey)
	for column, n := range map[string]int{"credentials.sealed": 1, "webhooks.secret_sealed": 1, "action_invocations.params_sealed": 2} {
		require.Regexp(t, `level=WARN msg="stored secrets do not open with any key of secrets.keys: every call that needs one fails. `+
			`List the key they were sealed with in secrets.keys again .*column=`+regexp.QuoteMeta(column)+` holds=.* count=`+fmt.Sprint(n)+
			` sealed_with="key id \\"old\\"" secrets_keys=\[new\]`, out)
	}
	for _, secret := range []string{oldKey, newKey, "plain-"} {
		require.NotContains(t, out, secret)
	}
}

// Without database.url, `secrets` (which reads no `outboxd dev`
// directory) says what to set, and does not send the reader to
// `outboxd dev`, which it would not use; `serve` still does.
func TestSecrets_WithoutDatabaseURLSaysWhatToSet(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=", "OUTBOXD_DATABASE_URL="}
	code, out := run(t, env, "secrets", "status")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "database.url is not set: set DATABASE_URL (or OUTBOXD_DATABASE_URL) to the database of the outboxd `outboxd secrets status` is for")
	require.NotContains(t, out, "run `outboxd dev`")

	code, out = run(t, env, "serve", "--http-addr", "127.0.0.1:0")
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "or run `outboxd dev` for an embedded database")
}
