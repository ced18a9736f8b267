package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
	"github.com/outboxd/outboxd/worker"
)

// exportAudit downloads the default org's export.
func exportAudit(t *testing.T, b *apptest.Bundle) []byte {
	t.Helper()
	r := b.Do("GET", "/v1/audit/export", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "application/x-ndjson", r.Header.Get("Content-Type"))
	return r.Raw
}

// storedAudit is every stored entry's text, read past the API.
func storedAudit(t *testing.T, b *apptest.Bundle) string {
	t.Helper()
	var all string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(
		actor_subject || ' ' || client_addr || ' ' || action || ' ' || target_id || ' ' || before_state || ' ' || after_state, E'\n'), '')
		FROM audit_entries`).Scan(&all))
	return all
}

// TestAudit_EveryChangeIsRecorded makes each kind of administrative change
// through the API and finds exactly one entry for each, with the caller,
// its token kind and role, the client address from X-Forwarded-For, and
// the state before and after; no secret it used appears in any stored
// entry or the export. Members are refused the trail and another
// organization sees none of it. The export then verifies.
func TestAudit_EveryChangeIsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := apptest.Start(t, &apptest.Options{
		HTTP:      &httpserver.Config{TrustForwardedFor: true, ReadTimeout: 5 * time.Minute, WriteTimeout: 5 * time.Minute},
		Worker:    worker.Config{MaxAttempts: 1},
		SlackFunc: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) },
	})
	const from = "203.0.113.7"
	do := func(method, path, token string, body any, status int) *apptest.Response {
		t.Helper()
		r := b.Do(method, path, token, body, "X-Forwarded-For", "198.51.100.1, "+from)
		require.Equal(t, status, r.Status, "%s %s: %s", method, path, r.Raw)
		return r
	}
	secrets := []string{"xoxb-audit-secret-1", "xoxb-audit-secret-2", "mcp-audit-secret-3", "mcp-audit-secret-4", "db-audit-secret-5", "db-audit-secret-6",
		"mcp-audit-url-key-7", "mcp-audit-url-key-8"}

	do("PUT", "/v1/action-modes", b.Admin(), map[string]string{"slack:send_message": "deny"}, http.StatusOK)
	do("PUT", "/v1/automations/automation-1/action-modes", b.Admin(), map[string]string{"slack:send_message": "allow"}, http.StatusOK)
	do("PUT", "/v1/credentials/slack", b.Owner(), map[string]string{"token": secrets[0]}, http.StatusOK)
	do("PUT", "/v1/credentials/slack", b.Owner(), map[string]string{"token": secrets[1]}, http.StatusOK)

	srv := newMCPServer(t)
	// A key in a connector URL's query is a secret too.
	conn := do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "notes", "url": srv.URL + "?key=" + secrets[6], "transport": "remote_http",
		"auth": map[string]any{"type": "bearer", "secret": secrets[2]}}, http.StatusCreated).Body["connector"].(map[string]any)
	connID := conn["id"].(string)
	do("PATCH", "/v1/connectors/"+connID, b.Owner(), map[string]any{"url": srv.URL + "?key=" + secrets[7],
		"auth": map[string]any{"type": "bearer", "secret": secrets[3]}}, http.StatusOK)
	do("PUT", "/v1/connectors/"+connID+"/tools", b.Owner(), map[string]string{"create_note": "allow"}, http.StatusOK)
	do("DELETE", "/v1/connectors/"+connID, b.Owner(), nil, http.StatusNoContent)

	db := do("POST", "/v1/databases", b.Owner(), map[string]any{"name": "shop", "url": "postgres://reader:" + secrets[4] + "@127.0.0.1:1/shop"},
		http.StatusCreated).Body["database"].(map[string]any)
	dbID := db["id"].(string)
	do("PATCH", "/v1/databases/"+dbID, b.Owner(), map[string]any{"url": "postgres://reader:" + secrets[5] + "@127.0.0.1:1/shop"}, http.StatusOK)
	do("DELETE", "/v1/databases/"+dbID, b.Owner(), nil, http.StatusNoContent)

	created := do("POST", "/v1/webhooks", b.Owner(), map[string]any{"url": "https://hooks.example.com/audit", "events": []string{"action_completed"}}, http.StatusCreated)
	hookID := created.Body["webhook"].(map[string]any)["id"].(string)
	secrets = append(secrets, created.Body["secret"].(string))
	rotated := do("POST", "/v1/webhooks/"+hookID+"/rotate-secret", b.Owner(), nil, http.StatusOK)
	secrets = append(secrets, rotated.Body["secret"].(string))
	do("PATCH", "/v1/webhooks/"+hookID, b.Owner(), map[string]any{"enabled": false}, http.StatusOK)
	do("PATCH", "/v1/webhooks/"+hookID, b.Owner(), map[string]any{"enabled": true}, http.StatusOK)
	do("DELETE", "/v1/webhooks/"+hookID, b.Owner(), nil, http.StatusNoContent)

	do("PUT", "/v1/notifications/slack", b.Admin(), map[string]any{"channel": "C0123456789"}, http.StatusOK)
	do("PUT", "/v1/approvers/slack", b.Owner(), map[string]any{"U0123": map[string]string{"user_id": "alice", "role": "admin"}}, http.StatusOK)
	// A quiet window twelve hours from now, which holds none of the
	// envelopes below whenever the test runs.
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	quiet := time.Now().In(paris).Add(12 * time.Hour)
	do("PUT", "/v1/quiet-hours", b.Admin(), map[string]any{"windows": []any{map[string]string{"time_zone": "Europe/Paris",
		"start": quiet.Format("15:04"), "end": quiet.Add(time.Hour).Format("15:04")}}}, http.StatusOK)
	do("PUT", "/v1/do-not-contact", b.Admin(), map[string]any{"patterns": []string{"#general"}}, http.StatusOK)
	do("POST", "/v1/queues/pause", b.Admin(), nil, http.StatusOK)
	do("POST", "/v1/queues/resume", b.Admin(), nil, http.StatusOK)

	// A dead letter: one attempt against a failing Slack.
	id := sendEnvelope(t, b, "audit-dlq", nil)
	b.WaitStatus(id, "failed", 15*time.Second)
	do("POST", "/v1/dead-letters/"+id+"/retry", b.Admin(), nil, http.StatusOK)
	b.WaitStatus(id, "failed", 15*time.Second)
	require.Eventually(t, func() bool {
		return b.Do("POST", "/v1/dead-letters/"+id+"/discard", b.Admin(), nil, "X-Forwarded-For", from).Status == http.StatusOK
	}, 15*time.Second, 50*time.Millisecond)
	// A refused change records nothing.
	do("PUT", "/v1/do-not-contact", b.Admin(), map[string]any{"patterns": []string{"[unclosed"}}, http.StatusBadRequest)

	entries := b.AuditEntries("")
	byAction := map[string][]map[string]any{}
	for _, e := range entries {
		byAction[e["action"].(string)] = append(byAction[e["action"].(string)], e)
		actor := e["actor"].(map[string]any)
		require.Equal(t, from, actor["client_addr"], "%v", e)
		require.Equal(t, "user", actor["kind"])
	}
	counts := map[string]int{}
	for a, es := range byAction {
		counts[a] = len(es)
	}
	require.Equal(t, map[string]int{
		"action_modes.replace": 2, "credential.store": 1, "credential.replace": 1,
		"connector.create": 1, "connector.update": 1, "connector.review_tools": 1, "connector.delete": 1,
		"database.create": 1, "database.update": 1, "database.delete": 1,
		"webhook.create": 1, "webhook.rotate_secret": 1, "webhook.update": 1, "webhook.reenable": 1, "webhook.delete": 1,
		"slack_settings.set_channel": 1, "slack_settings.replace_approvers": 1,
		"quiet_hours.replace": 1, "do_not_contact.replace": 1, "organization.pause": 1, "organization.resume": 1,
		"dead_letter.retry": 1, "dead_letter.discard": 1,
	}, counts)

	// Newest first, seq without gaps.
	for i, e := range entries {
		require.Equal(t, float64(len(entries)-i), e["seq"])
	}

	// Who, and before → after.
	one := func(action string) map[string]any { return byAction[action][0] }
	modes := byAction["action_modes.replace"]
	require.Equal(t, "automation/automation-1", modes[0]["target_id"])
	require.Equal(t, map[string]any{"slack:send_message": "allow"}, modes[0]["after"])
	require.Equal(t, "org", modes[1]["target_id"])
	require.Equal(t, map[string]any{}, modes[1]["before"])
	require.Equal(t, map[string]any{"slack:send_message": "deny"}, modes[1]["after"])
	require.Equal(t, map[string]any{"subject": "user-admin", "kind": "user", "role": "admin", "client_addr": from}, modes[1]["actor"])

	require.Nil(t, one("credential.store")["before"])
	require.Equal(t, false, one("credential.store")["after"].(map[string]any)["token_replaced"])
	require.Equal(t, "slack", one("credential.replace")["target_id"])
	require.NotNil(t, one("credential.replace")["before"])
	require.Equal(t, true, one("credential.replace")["after"].(map[string]any)["token_replaced"])
	require.Equal(t, "user-owner", one("credential.replace")["actor"].(map[string]any)["subject"])

	require.Equal(t, connID, one("connector.create")["target_id"])
	require.Equal(t, true, one("connector.update")["after"].(map[string]any)["secret_changed"])
	require.Equal(t, true, one("connector.update")["after"].(map[string]any)["url_changed"])
	require.Equal(t, srv.URL+"?key=[REDACTED]", one("connector.update")["before"].(map[string]any)["url"])
	require.Equal(t, "bearer", one("connector.update")["before"].(map[string]any)["auth"].(map[string]any)["type"])
	require.Equal(t, map[string]any{"create_note": "allow"}, one("connector.review_tools")["after"].(map[string]any)["reviewed"])
	require.Contains(t, one("connector.review_tools")["after"].(map[string]any)["tool_risk_overrides"], "create_note")
	require.Nil(t, one("connector.delete")["after"])
	require.Equal(t, "notes", one("connector.delete")["before"].(map[string]any)["name"])

	require.Equal(t, true, one("database.update")["after"].(map[string]any)["url_changed"])
	require.Equal(t, "127.0.0.1:1", one("database.update")["before"].(map[string]any)["host"])

	require.Equal(t, false, one("webhook.reenable")["before"].(map[string]any)["enabled"])
	require.Equal(t, true, one("webhook.reenable")["after"].(map[string]any)["enabled"])
	require.Equal(t, true, one("webhook.update")["before"].(map[string]any)["enabled"])
	require.Equal(t, true, one("webhook.rotate_secret")["after"].(map[string]any)["secret_changed"])

	require.Nil(t, one("slack_settings.set_channel")["before"].(map[string]any)["channel"])
	require.Equal(t, "C0123456789", one("slack_settings.set_channel")["after"].(map[string]any)["channel"])
	require.Equal(t, "owner", one("slack_settings.replace_approvers")["actor"].(map[string]any)["role"])
	require.Equal(t, []any{}, one("quiet_hours.replace")["before"])
	require.Equal(t, "Europe/Paris", one("quiet_hours.replace")["after"].([]any)[0].(map[string]any)["time_zone"])
	require.Equal(t, []any{"#general"}, one("do_not_contact.replace")["after"])
	require.Equal(t, false, one("organization.pause")["before"].(map[string]any)["paused"])
	require.Equal(t, true, one("organization.pause")["after"].(map[string]any)["paused"])
	require.Equal(t, false, one("organization.resume")["after"].(map[string]any)["paused"])
	require.Equal(t, []any{id}, one("dead_letter.retry")["after"].(map[string]any)["ids"])
	require.Equal(t, id, one("dead_letter.discard")["target_id"])

	// No secret anywhere in the trail.
	stored, export := storedAudit(t, b), string(exportAudit(t, b))
	for _, s := range secrets {
		require.NotContains(t, stored, s)
		require.NotContains(t, export, s)
	}
	n, err := audit.Verify(strings.NewReader(export))
	require.NoError(t, err)
	require.Equal(t, len(entries), n)

	// Members may not read it; another organization sees nothing of it.
	requireAPIError(t, b.Do("GET", "/v1/audit", b.Member(), nil), http.StatusForbidden, "forbidden")
	requireAPIError(t, b.Do("GET", "/v1/audit/export", b.Member(), nil), http.StatusForbidden, "forbidden")
	other := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	r := b.Do("GET", "/v1/audit", other, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["entries"])
	r = b.Do("GET", "/v1/audit/export", other, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Empty(t, r.Raw)

	// The API role may append but neither rewrite nor delete the trail.
	tenant, err := dbutil.TenantPool(ctx, b.Pool.Config())
	require.NoError(t, err)
	defer tenant.Close()
	_, err = tenant.Exec(dbutil.WithOrg(ctx, apptest.Org), "UPDATE audit_entries SET action = 'x'")
	require.ErrorContains(t, err, "permission denied")
	_, err = tenant.Exec(dbutil.WithOrg(ctx, apptest.Org), "DELETE FROM audit_entries")
	require.ErrorContains(t, err, "permission denied")
}

// TestAudit_ConnectorURLPathKeyIsRedacted changes a connector whose server
// takes its key in the URL's path (…/mcp/s/<key>/mcp) and finds the key in
// no entry of the trail, read through the API, the export or the table:
// the trail is kept for good and read more widely than the connector, and
// with the key anyone could call the server. The path's other segments stay.
func TestAudit_ConnectorURLPathKeyIsRedacted(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	srv := newMCPServer(t)
	keys := []string{"0f3a9c2e7b1d4e8fa6c5", "9e8d7c6b5a4f3e2d1c0b", "qk2Lr8Vz5Tn1Wx7Yp4Hs"}

	r := b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "notes", "url": srv.URL + "/mcp/s/" + keys[0] + "/mcp", "transport": "remote_http"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	connID := r.Body["connector"].(map[string]any)["id"].(string)
	r = b.Do("PATCH", "/v1/connectors/"+connID, b.Owner(), map[string]any{"url": srv.URL + "/mcp/s/" + keys[1] + "/mcp?key=" + keys[2]})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/v1/connectors/"+connID, b.Owner(), nil).Status)

	r = b.Do("GET", "/v1/audit", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var update map[string]any
	for _, e := range r.Body["entries"].([]any) {
		if e := e.(map[string]any); e["action"] == "connector.update" {
			update = e
		}
	}
	require.NotNil(t, update, string(r.Raw))
	require.Equal(t, srv.URL+"/mcp/s/[REDACTED]/mcp", update["before"].(map[string]any)["url"])
	require.Equal(t, srv.URL+"/mcp/s/[REDACTED]/mcp?key=[REDACTED]", update["after"].(map[string]any)["url"])
	stored, export := storedAudit(t, b), string(exportAudit(t, b))
	for _, k := range keys {
		require.NotContains(t, string(r.Raw), k)
		require.NotContains(t, stored, k)
		require.NotContains(t, export, k)
	}
}

// TestAudit_WebhookURLSecretIsRedacted creates, changes and deletes
// webhooks whose URLs hold their receiver's secret — a Slack incoming
// webhook's last path segment (letters only, which no key-like rule would
// catch), a token in the query, a key-like path segment — and finds none
// in the trail, read through the API, the export or the table, while the
// host and the path's plain segments stay. The webhook's own API still
// shows admins the whole URL.
func TestAudit_WebhookURLSecretIsRedacted(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	secrets := []string{"QwErTyUiOpAsDfGhJkLzXcVb", "tok-audit-webhook-query", "Zx81Kq0Lm2Nv4Bc6Xd9F"}
	slackURL := "https://hooks.slack.com/services/T0AUDIT01/B0AUDIT02/" + secrets[0]

	r := b.Do("POST", "/v1/webhooks", b.Owner(), map[string]any{"url": slackURL, "events": []string{"action_completed"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	hookID := r.Body["webhook"].(map[string]any)["id"].(string)
	r = b.Do("GET", "/v1/webhooks/"+hookID, b.Owner(), nil)
	require.Equal(t, slackURL, r.Body["webhook"].(map[string]any)["url"], string(r.Raw))
	r = b.Do("PATCH", "/v1/webhooks/"+hookID, b.Owner(), map[string]any{"url": "https://hooks.example.com/in/" + secrets[2] + "?token=" + secrets[1]})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/v1/webhooks/"+hookID, b.Owner(), nil).Status)

	r = b.Do("GET", "/v1/audit", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	urls := map[string][]any{}
	for _, e := range r.Body["entries"].([]any) {
		e := e.(map[string]any)
		for _, side := range []string{"before", "after"} {
			if state, ok := e[side].(map[string]any); ok {
				urls[e["action"].(string)] = append(urls[e["action"].(string)], state["url"])
			}
		}
	}
	require.Equal(t, []any{"https://hooks.slack.com/services/[REDACTED]/[REDACTED]/[REDACTED]"}, urls["webhook.create"])
	require.Equal(t, []any{"https://hooks.slack.com/services/[REDACTED]/[REDACTED]/[REDACTED]",
		"https://hooks.example.com/in/[REDACTED]?token=[REDACTED]"}, urls["webhook.update"])
	require.Equal(t, []any{"https://hooks.example.com/in/[REDACTED]?token=[REDACTED]"}, urls["webhook.delete"])
	stored, export := storedAudit(t, b), string(exportAudit(t, b))
	for _, k := range secrets {
		require.NotContains(t, string(r.Raw), k)
		require.NotContains(t, stored, k)
		require.NotContains(t, export, k)
	}
}

// TestAudit_PagesFiltersAndExport pages through the trail newest first
// with the cursor, narrows it by actor, action, target and time, and
// exports it: the export verifies, and fails once a line is altered,
// deleted or moved.
func TestAudit_PagesFiltersAndExport(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	alice := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: "alice"}})
	bob := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleOwner, RegisteredClaims: jwt.RegisteredClaims{Subject: "bob"}})
	for i := range 5 {
		// Without http.trust_forwarded_for a client cannot name its address.
		r := b.Do("PUT", "/v1/do-not-contact", alice, map[string]any{"patterns": []string{fmt.Sprintf("#room-%d", i)}}, "X-Forwarded-For", "203.0.113.9")
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	for _, e := range b.AuditEntries("") {
		require.Equal(t, "127.0.0.1", e["actor"].(map[string]any)["client_addr"])
	}
	var middle time.Time
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT occurred_at FROM audit_entries WHERE organization_id = $1 AND seq = 3", apptest.Org).Scan(&middle))
	for range 2 {
		r := b.Do("PUT", "/v1/automations/nightly/action-modes", bob, map[string]string{"slack:send_message": "deny"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}

	// Pages of 3: 7, 6, 5 | 4, 3, 2 | 1.
	var seqs []float64
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		r := b.Do("GET", "/v1/audit?limit=3"+cursor, b.Owner(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		for _, e := range r.Body["entries"].([]any) {
			seqs = append(seqs, e.(map[string]any)["seq"].(float64))
		}
		if r.Body["next_cursor"] == nil {
			break
		}
		cursor = "&cursor=" + r.Body["next_cursor"].(string)
	}
	require.Equal(t, []float64{7, 6, 5, 4, 3, 2, 1}, seqs)

	actions := func(entries []map[string]any) []float64 {
		var out []float64
		for _, e := range entries {
			out = append(out, e["seq"].(float64))
		}
		return out
	}
	require.Equal(t, []float64{7, 6}, actions(b.AuditEntries("actor=bob")))
	require.Equal(t, []float64{5, 4, 3, 2, 1}, actions(b.AuditEntries("action=do_not_contact")))
	require.Equal(t, []float64{5, 4, 3, 2, 1}, actions(b.AuditEntries("action=do_not_contact.replace")))
	require.Empty(t, b.AuditEntries("action=do_not"))
	require.Equal(t, []float64{7, 6}, actions(b.AuditEntries("target_type=action_modes&target_id=automation/nightly")))
	require.Empty(t, b.AuditEntries("target_type=action_modes&target_id=org"))
	at := middle.Format(time.RFC3339Nano)
	require.Equal(t, []float64{7, 6, 5, 4, 3}, actions(b.AuditEntries("since="+at)))
	require.Equal(t, []float64{2, 1}, actions(b.AuditEntries("until="+at)))
	require.Equal(t, []float64{5, 4, 3}, actions(b.AuditEntries("actor=alice&since="+at)))
	requireAPIError(t, b.Do("GET", "/v1/audit?since=yesterday", b.Owner(), nil), http.StatusBadRequest, "invalid_request")
	requireAPIError(t, b.Do("GET", "/v1/audit?cursor=x", b.Owner(), nil), http.StatusBadRequest, "invalid_request")
	requireAPIError(t, b.Do("GET", "/v1/audit?limit=501", b.Owner(), nil), http.StatusBadRequest, "invalid_request")

	export := exportAudit(t, b)
	n, err := audit.Verify(bytes.NewReader(export))
	require.NoError(t, err)
	require.Equal(t, 7, n)
	lines := strings.SplitAfter(strings.TrimSuffix(string(export), "\n"), "\n")
	require.Len(t, lines, 7)
	first := lines[0]
	require.Contains(t, first, `"seq":1,`)

	broken := func(lines []string) *audit.VerifyError {
		t.Helper()
		_, err := audit.Verify(strings.NewReader(strings.Join(lines, "")))
		var ve *audit.VerifyError
		require.ErrorAs(t, err, &ve)
		return ve
	}
	altered := append([]string(nil), lines...)
	altered[3] = strings.Replace(altered[3], "#room-3", "#room-X", 1)
	ve := broken(altered)
	require.Equal(t, 4, ve.Line)
	require.Contains(t, ve.Reason, "altered")

	deleted := append(append([]string(nil), lines[:2]...), lines[3:]...)
	ve = broken(deleted)
	require.Equal(t, 3, ve.Line)
	require.Contains(t, ve.Reason, "missing")

	reordered := append([]string(nil), lines...)
	reordered[4], reordered[5] = reordered[5], reordered[4]
	ve = broken(reordered)
	require.Equal(t, 5, ve.Line)

	// Rewritten whole with a recomputed hash, the entry still breaks the
	// next one's prev_hash.
	var e audit.Entry
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &e))
	e.Actor.Subject = "mallory"
	e.Hash = audit.Hash(&e)
	forged, err := json.Marshal(e)
	require.NoError(t, err)
	rewritten := append([]string(nil), lines...)
	rewritten[1] = string(forged) + "\n"
	ve = broken(rewritten)
	require.Equal(t, 3, ve.Line)
	require.Contains(t, ve.Reason, "prev_hash")
}

// TestAudit_ConcurrentChangesKeepOneChain makes changes of one
// organization at once, through transactions of the settings (recorded in
// their own transaction) and after the fact (webhooks): the chain has one
// entry per change, numbered without gaps, and verifies.
func TestAudit_ConcurrentChangesKeepOneChain(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	const writers = 8
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			paths := []struct{ method, path string }{{"PUT", "/v1/do-not-contact"}, {"POST", "/v1/webhooks"}}
			p := paths[i%2]
			var body any = map[string]any{"patterns": []string{fmt.Sprintf("#room-%d", i)}}
			if p.method == "POST" {
				body = map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i), "events": []string{"action_completed"}}
			}
			for range 3 {
				r := b.Do(p.method, p.path, b.Owner(), body)
				require.Less(t, r.Status, 300, string(r.Raw))
			}
		})
	}
	wg.Wait()
	n, err := audit.Verify(bytes.NewReader(exportAudit(t, b)))
	require.NoError(t, err)
	require.Equal(t, writers*3, n)
}

// TestSettings_IfMatch replaces each whole setting with the ETag of a GET:
// a stale one gets 412 and changes nothing (no entry either), the fresh
// one 200 with the new ETag, none at all still 200.
func TestSettings_IfMatch(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	for _, tc := range []struct {
		path       string
		first, two any
	}{
		{"/v1/action-modes", map[string]string{"slack:send_message": "deny"}, map[string]string{"slack:send_message": "allow"}},
		{"/v1/automations/nightly/action-modes", map[string]string{"slack:send_message": "deny"}, map[string]string{}},
		{"/v1/quiet-hours",
			map[string]any{"windows": []any{map[string]string{"time_zone": "UTC", "start": "22:00", "end": "07:00"}}},
			map[string]any{"windows": []any{map[string]string{"time_zone": "UTC", "start": "23:00", "end": "06:00"}}}},
		{"/v1/do-not-contact", map[string]any{"patterns": []string{"#a"}}, map[string]any{"patterns": []string{"#b"}}},
		{"/v1/notifications/slack", map[string]any{"channel": "C0000000001"}, map[string]any{"channel": "C0000000002"}},
		{"/v1/approvers/slack", map[string]any{"U01": map[string]string{"user_id": "alice", "role": "admin"}},
			map[string]any{"U02": map[string]string{"user_id": "bob", "role": "owner"}}},
	} {
		t.Run(strings.ReplaceAll(tc.path, "/", "_"), func(t *testing.T) {
			read := b.Do("GET", tc.path, b.Owner(), nil)
			require.Equal(t, http.StatusOK, read.Status, string(read.Raw))
			stale := read.Header.Get("ETag")
			require.NotEmpty(t, stale)

			// Another change lands first.
			first := b.Do("PUT", tc.path, b.Owner(), tc.first, "If-Match", stale)
			require.Equal(t, http.StatusOK, first.Status, string(first.Raw))
			fresh := first.Header.Get("ETag")
			require.NotEqual(t, stale, fresh)
			entries := len(b.AuditEntries(""))

			lost := b.Do("PUT", tc.path, b.Owner(), tc.two, "If-Match", stale)
			e := requireAPIError(t, lost, http.StatusPreconditionFailed, "precondition_failed")
			require.Contains(t, e["message"], "changed since they were read")
			now := b.Do("GET", tc.path, b.Owner(), nil)
			require.Equal(t, string(first.Raw), string(now.Raw), "nothing changed")
			require.Equal(t, fresh, now.Header.Get("ETag"))
			require.Len(t, b.AuditEntries(""), entries, "a refused change records nothing")

			won := b.Do("PUT", tc.path, b.Owner(), tc.two, "If-Match", `W/`+fresh+`, "other"`)
			require.Equal(t, http.StatusOK, won.Status, string(won.Raw))
			require.NotEqual(t, fresh, won.Header.Get("ETag"))
			require.Equal(t, http.StatusOK, b.Do("PUT", tc.path, b.Owner(), tc.first).Status, "without If-Match")
			require.Len(t, b.AuditEntries(""), entries+2)
		})
	}
}

// TestAudit_ADecisionIsNeverCommittedWithoutItsEntry: a decision and its
// audit entry commit together. While the trail refuses the entry, the
// denial is refused and the invocation stays pending; once it accepts
// again, the denial and its one entry land.
func TestAudit_ADecisionIsNeverCommittedWithoutItsEntry(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-audit")
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "ask first"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	ctx := context.Background()
	_, err := b.Pool.Exec(ctx, `CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'the trail is full'; END $$;
		CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_entries FOR EACH ROW EXECUTE FUNCTION refuse_audit()`)
	require.NoError(t, err)
	b.Contract = nil // a 500 the document does not list per route
	r = b.Do("POST", "/v1/invocations/"+id+"/deny", b.Admin(), map[string]any{"reason": "not now"})
	require.Equal(t, http.StatusInternalServerError, r.Status, string(r.Raw))
	require.Equal(t, "pending", b.Invocation(id)["status"], "no entry, no denial")
	require.Empty(t, b.AuditEntries("action=invocation.deny"))

	_, err = b.Pool.Exec(ctx, `DROP TRIGGER refuse_audit ON audit_entries`)
	require.NoError(t, err)
	r = b.Do("POST", "/v1/invocations/"+id+"/deny", b.Admin(), map[string]any{"reason": "not now"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "denied", b.Invocation(id)["status"])
	entries := b.AuditEntries("action=invocation.deny")
	require.Len(t, entries, 1)
	require.Equal(t, id, entries[0]["target_id"])
}
