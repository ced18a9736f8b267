package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestTokens_OperatorRevokes: `outboxd tokens revoke`, a process on the
// database as its owner, revokes a session's tokens in any organization;
// the running API process refuses them within its refresh, another
// session's token keeps working, and `tokens revocations` lists the
// revocation for that organization only. Bad flags are refused naming the
// flag.
func TestTokens_OperatorRevokes(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Role: app.RoleAPI})
	revoked := b.Sandbox()
	other := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-2"})
	probe := func(session, token string) *apptest.Response {
		return b.Do("GET", "/v1/sessions/"+session+"/actions/invocations", token, nil)
	}
	require.Equal(t, http.StatusOK, probe(apptest.Session, revoked).Status)

	env := []string{"DATABASE_URL=" + b.DBURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	code, out := run(t, env, "tokens", "revoke", "--org", apptest.Org, "--session", apptest.Session, "--by", "ops")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "session "+apptest.Session+", tokens issued before")
	entry := operatorEntry(t, b, "tokens.revoke")
	require.Equal(t, "ops", entry["actor"].(map[string]any)["subject"])
	require.Equal(t, apptest.Session, entry["after"].(map[string]any)["session_id"])

	deadline := time.Now().Add(15 * time.Second)
	for probe(apptest.Session, revoked).Status == http.StatusOK {
		require.True(t, time.Now().Before(deadline), "the API process never refused the revoked token")
		time.Sleep(20 * time.Millisecond)
	}
	r := probe(apptest.Session, revoked)
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Raw))
	require.Equal(t, "token_revoked", r.Body["error"].(map[string]any)["code"])
	require.Equal(t, http.StatusOK, probe("session-2", other).Status)

	code, out = run(t, env, "tokens", "revocations", "--org", apptest.Org)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^\d+\s+session `+apptest.Session+`, tokens issued before \S+\s+\S+\s+ops\s+never$`, out)
	code, out = run(t, env, "tokens", "revocations", "--org", "org-2")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, apptest.Session)

	for args, want := range map[string][]string{
		"two selectors": {"--jti", "j", "--automation", "a"},
		"bad time":      {"--issued-before", "yesterday"},
		"no selector":   {},
	} {
		code, out := run(t, env, append([]string{"tokens", "revoke", "--org", apptest.Org}, want...)...)
		require.NotEqual(t, 0, code, "%s: %s", args, out)
		switch args {
		case "two selectors":
			require.Contains(t, out, "not both --jti and --automation")
		case "bad time":
			require.Contains(t, out, "--issued-before must be now or an RFC 3339 time")
		default:
			require.Contains(t, out, "name what to revoke")
		}
	}
}

// TestTokens_OperatorRevokesASubject: `outboxd tokens revoke --subject`
// revokes one person's tokens of an organization: the running API process
// refuses their user and service tokens within its refresh and ends their
// open event stream; another person's token, the same person's in another
// organization and one issued at the cut-off keep working. Bad subjects
// are refused naming --subject, and store nothing.
func TestTokens_OperatorRevokesASubject(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Role: app.RoleAPI})
	const probe = "/v1/actions/bootstrap-guide"
	token := func(org, sub string, kind auth.Kind, role auth.Role) string {
		return b.Token(auth.Claims{Org: org, Kind: kind, Role: role, RegisteredClaims: jwt.RegisteredClaims{Subject: sub}})
	}
	alice := token(apptest.Org, "alice", auth.KindUser, auth.RoleAdmin)
	aliceService := token(apptest.Org, "alice", auth.KindService, "")
	bob := token(apptest.Org, "bob", auth.KindUser, auth.RoleAdmin)
	aliceElsewhere := token("org-2", "alice", auth.KindUser, auth.RoleAdmin)
	for _, tok := range []string{alice, aliceService, bob, aliceElsewhere} {
		require.Equal(t, http.StatusOK, b.Do("GET", probe, tok, nil).Status)
	}
	stream := b.Stream("/v1/events", alice)
	r := b.Do("PUT", "/v1/approvers/slack", b.Owner(), map[string]any{
		"U_ALICE": map[string]string{"user_id": "alice", "role": "admin"},
		"U_BOB":   map[string]string{"user_id": "bob", "role": "admin"},
	})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	// A grant of hers.
	b.StoreSlackToken("xoxb-grants")
	b.SetModes(map[string]string{"slack:send_message": "require_approval"})
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "granted"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	r = b.Do("POST", "/v1/invocations/"+r.Body["invocation_id"].(string)+"/approve", alice,
		map[string]any{"mode": "once", "grant": map[string]any{"count": 5, "minutes": 60}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	env := []string{"DATABASE_URL=" + b.DBURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	for args, want := range map[string][]string{
		"with another selector": {"--subject", "alice", "--jti", "j"},
		"too long":              {"--subject", strings.Repeat("a", 256)},
		"control character":     {"--subject", "ali\nce"},
	} {
		code, out := run(t, env, append([]string{"tokens", "revoke", "--org", apptest.Org}, want...)...)
		require.NotEqual(t, 0, code, "%s: %s", args, out)
		switch args {
		case "with another selector":
			require.Contains(t, out, "not both --jti and --subject")
		default:
			require.Contains(t, out, "--subject must be valid text of at most 255 bytes without control characters")
		}
	}
	code, out := run(t, env, "tokens", "revocations", "--org", apptest.Org)
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "alice", "nothing was stored")

	code, out = run(t, env, "tokens", "revoke", "--org", apptest.Org, "--subject", "alice", "--by", "ops")
	require.Equal(t, 0, code, out)
	m := regexp.MustCompile(`subject alice, tokens issued before (\S+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	cut, err := time.Parse(time.RFC3339, m[1])
	require.NoError(t, err)
	entry := operatorEntry(t, b, "tokens.revoke")
	require.Equal(t, "alice", entry["after"].(map[string]any)["subject"])
	// Her Slack approvals end with it: the approvers mapped to her are
	// removed, by the operator; bob's stay.
	entries := b.AuditEntries("action=slack_settings.replace_approvers")
	require.Len(t, entries, 2, "the owner's mapping and the removal")
	entry = entries[0]
	require.Equal(t, "operator", entry["actor"].(map[string]any)["kind"])
	require.Equal(t, "ops", entry["actor"].(map[string]any)["subject"])
	require.Equal(t, map[string]any{"U_BOB": map[string]any{"user_id": "bob", "role": "admin"}}, entry["after"].(map[string]any)["approvers"])
	// And her grants.
	r = b.Do("GET", "/v1/grants", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Len(t, r.Body["grants"], 1)
	g := r.Body["grants"].([]any)[0].(map[string]any)
	require.Equal(t, "offboarded", g["revoke_reason"])
	require.Equal(t, "ops", g["revoked_by"])

	deadline := time.Now().Add(15 * time.Second)
	for b.Do("GET", probe, alice, nil).Status == http.StatusOK {
		require.True(t, time.Now().Before(deadline), "the API process never refused the revoked person's token")
		time.Sleep(20 * time.Millisecond)
	}
	for _, tok := range []string{alice, aliceService} {
		r := b.Do("GET", probe, tok, nil)
		require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Raw))
		require.Equal(t, "token_revoked", r.Body["error"].(map[string]any)["code"])
	}
	require.True(t, stream.Ended(15*time.Second), "the revoked person's event stream ends")
	later, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"org": apptest.Org, "sub": "alice", "kind": "user", "role": "admin",
		"iat": cut.Unix(), "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte(b.Secret))
	require.NoError(t, err)
	for _, tok := range []string{bob, aliceElsewhere, later} {
		require.Equal(t, http.StatusOK, b.Do("GET", probe, tok, nil).Status)
	}

	code, out = run(t, env, "tokens", "revocations", "--org", apptest.Org)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^\d+\s+subject alice, tokens issued before \S+\s+\S+\s+ops\s+never$`, out)
}
