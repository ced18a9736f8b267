package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/auth/signin/signintest"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// revocationWait bounds how long a test waits for a process to learn of a
// revocation (the bundles refresh every 100ms).
const revocationWait = 15 * time.Second

// sessionProbe is a route a sandbox token of session may call.
func sessionProbe(session string) string {
	return "/v1/sessions/" + session + "/actions/invocations"
}

// untilRefused calls path with token on b until it is refused as revoked,
// failing the test if it never is; it returns the refusal.
func untilRefused(t *testing.T, b *apptest.Bundle, path, token string) *apptest.Response {
	t.Helper()
	deadline := time.Now().Add(revocationWait)
	for {
		r := b.Do("GET", path, token, nil)
		if r.Status != http.StatusOK {
			requireAPIError(t, r, http.StatusUnauthorized, "token_revoked")
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s was not refused within %s", path, revocationWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// postMCPWith posts an MCP initialize to b's /mcp with token.
func postMCPWith(t *testing.T, b *apptest.Bundle, token string) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest("POST", b.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	r := &apptest.Response{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r.Body))
	}
	return r
}

// TestRevocation_AcrossProcesses revokes a session's tokens through one
// API process: that process refuses them at once, the other within its
// refresh, on REST routes, on /mcp and on an MCP session opened before;
// the token's event stream open on the other process ends, and a token
// remembered by the verifier is refused too. Another session's token and
// another organization's token of the same session id keep working, and
// the other organization does not see the revocation.
func TestRevocation_AcrossProcesses(t *testing.T) {
	t.Parallel()
	api1 := apptest.Start(t, &apptest.Options{Role: app.RoleAPI})
	api2 := apptest.Start(t, &apptest.Options{Role: app.RoleAPI, DatabaseURL: api1.DBURL, SecretsKey: api1.Config.SecretsKey})
	revoked := api1.Sandbox()
	otherSession := api1.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-2"})
	otherOrg := api1.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: apptest.Session})
	owner2 := api1.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})

	// Every token works on both processes, and each verifier remembers it.
	for _, b := range []*apptest.Bundle{api1, api2} {
		for _, tok := range []string{revoked, otherOrg} {
			require.Equal(t, http.StatusOK, b.Do("GET", sessionProbe(apptest.Session), tok, nil).Status)
		}
		require.Equal(t, http.StatusOK, b.Do("GET", sessionProbe("session-2"), otherSession, nil).Status)
	}
	stream := api2.Stream("/v1/sessions/"+apptest.Session+"/events", revoked)
	mcp := mcpSession(t, api2, revoked)
	_, err := mcp.ListTools(context.Background(), nil)
	require.NoError(t, err)

	r := api1.Do("POST", "/v1/revocations", api1.Owner(), map[string]string{"session_id": apptest.Session})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, apptest.Session, r.Body["session_id"])
	require.Nil(t, r.Body["jti"])
	require.Equal(t, "user-owner", r.Body["revoked_by"])
	require.Nil(t, r.Body["expires_at"], "no auth.max_lifetime: kept")

	// The revoking process refuses at once.
	requireAPIError(t, api1.Do("GET", sessionProbe(apptest.Session), revoked, nil), http.StatusUnauthorized, "token_revoked")
	// The other within its refresh: the stream ends, REST and /mcp refuse.
	require.True(t, stream.Ended(revocationWait), "the revoked token's event stream ends")
	e := requireAPIError(t, untilRefused(t, api2, sessionProbe(apptest.Session), revoked), http.StatusUnauthorized, "token_revoked")
	require.Equal(t, "token revoked", e["message"])
	requireAPIError(t, postMCPWith(t, api2, revoked), http.StatusUnauthorized, "token_revoked")
	_, err = mcp.ListTools(context.Background(), nil)
	require.Error(t, err, "the MCP session opened before is refused")
	resp := api2.Open(context.Background(), "/v1/sessions/"+apptest.Session+"/events", revoked)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a reconnect is refused")

	// Other tokens keep working, on both processes, REST, streams and /mcp.
	for _, b := range []*apptest.Bundle{api1, api2} {
		require.Equal(t, http.StatusOK, b.Do("GET", sessionProbe("session-2"), otherSession, nil).Status)
		require.Equal(t, http.StatusOK, b.Do("GET", sessionProbe(apptest.Session), otherOrg, nil).Status)
		require.Equal(t, http.StatusOK, postMCPWith(t, b, otherSession).Status)
		s := b.Stream("/v1/sessions/session-2/events", otherSession)
		s.Close()
	}
	// A token minted after the revocation for the same session works.
	later := signed(t, api1, jwt.MapClaims{"org": apptest.Org, "sub": "sandbox-later", "kind": "sandbox", "session_id": apptest.Session,
		"iat": time.Now().Add(2 * time.Second).Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	require.Equal(t, http.StatusOK, api2.Do("GET", sessionProbe(apptest.Session), later, nil).Status)

	// Listed for the organization, on either process; not for another.
	list := api2.Do("GET", "/v1/revocations", api1.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	require.Len(t, list.Body["revocations"], 1)
	require.Equal(t, r.Body["id"], list.Body["revocations"].([]any)[0].(map[string]any)["id"])
	list = api1.Do("GET", "/v1/revocations", owner2, nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	require.Empty(t, list.Body["revocations"])

	// In the database, the API's tenant role sees its organization's
	// revocations only, and not the processes' version row at all.
	ctx := context.Background()
	tenant, err := dbutil.TenantPool(ctx, api1.Pool.Config())
	require.NoError(t, err)
	defer tenant.Close()
	for org, want := range map[string]int{apptest.Org: 1, "org-2": 0, "": 0} {
		var n int
		require.NoError(t, tenant.QueryRow(dbutil.WithOrg(ctx, org), "SELECT count(*) FROM token_revocations").Scan(&n))
		require.Equal(t, want, n, "token_revocations as %q", org)
	}
	var version int64
	err = tenant.QueryRow(dbutil.WithOrg(ctx, apptest.Org), "SELECT version FROM token_revocation_version").Scan(&version)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "42501", pgErr.Code, "insufficient_privilege")
	require.NoError(t, api1.Pool.QueryRow(ctx, "SELECT version FROM token_revocation_version").Scan(&version))
	require.Positive(t, version)
}

// signed signs claims with b's secret as they are, so a test can set iat.
func signed(t *testing.T, b *apptest.Bundle, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(b.Secret))
	require.NoError(t, err)
	return tok
}

// TestRevocation_Selectors revokes by jti, by automation and every token
// of an organization issued before a time: the matching tokens are
// refused, the others are not.
func TestRevocation_Selectors(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Role: app.RoleAPI, Auth: auth.Config{MaxLifetime: 2 * time.Hour}})
	const probe = "/v1/actions/bootstrap-guide"

	t.Run("JTI", func(t *testing.T) {
		t.Parallel()
		org := "org-jti"
		owner := b.Token(auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleOwner})
		one := b.Token(auth.Claims{Org: org, Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{ID: "jti-1"}})
		two := b.Token(auth.Claims{Org: org, Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{ID: "jti-2"}})
		require.Equal(t, http.StatusOK, b.Do("GET", probe, one, nil).Status)
		exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		r := b.Do("POST", "/v1/revocations", owner, map[string]string{"jti": "jti-1", "expires_at": exp.Format(time.RFC3339)})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		require.Equal(t, "jti-1", r.Body["jti"])
		require.Equal(t, exp.Add(auth.DefaultLeeway).Format(time.RFC3339), r.Body["expires_at"], "the token's exp, before the maximum lifetime")
		requireAPIError(t, b.Do("GET", probe, one, nil), http.StatusUnauthorized, "token_revoked")
		require.Equal(t, http.StatusOK, b.Do("GET", probe, two, nil).Status)
		trail := b.Do("GET", "/v1/audit?action=tokens.revoke", owner, nil)
		require.Equal(t, http.StatusOK, trail.Status, string(trail.Raw))
		require.Len(t, trail.Body["entries"], 1, "the revocation is in the audit trail")
	})
	t.Run("Automation", func(t *testing.T) {
		t.Parallel()
		org := "org-automation"
		owner := b.Token(auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleOwner})
		one := b.Token(auth.Claims{Org: org, Kind: auth.KindService, AutomationID: "automation-1"})
		two := b.Token(auth.Claims{Org: org, Kind: auth.KindService, AutomationID: "automation-2"})
		require.Equal(t, http.StatusOK, postMCPWith(t, b, one).Status)
		r := b.Do("POST", "/v1/revocations", owner, map[string]string{"automation_id": "automation-1"})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		revokedAt, err := time.Parse(time.RFC3339, r.Body["issued_before"].(string))
		require.NoError(t, err)
		expires, err := time.Parse(time.RFC3339, r.Body["expires_at"].(string))
		require.NoError(t, err)
		require.Equal(t, revokedAt.Add(2*time.Hour+auth.DefaultLeeway), expires, "dropped once every token it could refuse has expired")
		requireAPIError(t, b.Do("GET", probe, one, nil), http.StatusUnauthorized, "token_revoked")
		requireAPIError(t, postMCPWith(t, b, one), http.StatusUnauthorized, "token_revoked")
		require.Equal(t, http.StatusOK, b.Do("GET", probe, two, nil).Status)
		require.Equal(t, http.StatusOK, postMCPWith(t, b, two).Status)
	})
	t.Run("IssuedBefore", func(t *testing.T) {
		t.Parallel()
		org := "org-issued-before"
		owner := b.Token(auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleOwner})
		member := b.Token(auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleMember})
		noIat := signed(t, b, jwt.MapClaims{"org": org, "sub": "no-iat", "kind": "service", "exp": time.Now().Add(time.Hour).Unix()})
		elsewhere := b.Token(auth.Claims{Org: "org-elsewhere", Kind: auth.KindService})
		require.Equal(t, http.StatusOK, b.Do("GET", probe, member, nil).Status)
		cut := time.Now()
		r := b.Do("POST", "/v1/revocations", owner, map[string]string{"issued_before": cut.UTC().Format(time.RFC3339Nano)})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		for _, tok := range []string{owner, member, noIat} {
			requireAPIError(t, b.Do("GET", probe, tok, nil), http.StatusUnauthorized, "token_revoked")
		}
		require.Equal(t, http.StatusOK, b.Do("GET", probe, elsewhere, nil).Status)
		newOwner := signed(t, b, jwt.MapClaims{"org": org, "sub": "new-owner", "kind": "user", "role": "owner",
			"iat": cut.Add(time.Second).Unix(), "exp": cut.Add(time.Hour).Unix()})
		list := b.Do("GET", "/v1/revocations", newOwner, nil)
		require.Equal(t, http.StatusOK, list.Status, "a token issued after the cut-off works: %s", list.Raw)
		require.Len(t, list.Body["revocations"], 1)
	})
}

// TestRevocation_Refusals: only an owner revokes or lists; a request that
// names no selector, two, an unknown one or a bad time is a 400 naming the
// field, and revokes nothing.
func TestRevocation_Refusals(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Role: app.RoleAPI})
	for _, tok := range []string{b.Admin(), b.Member(), b.Sandbox(), b.Service()} {
		requireAPIError(t, b.Do("POST", "/v1/revocations", tok, map[string]string{"session_id": apptest.Session}), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("GET", "/v1/revocations", tok, nil), http.StatusForbidden, "forbidden")
	}
	b.Contract = nil // some bodies below are outside the documented schema on purpose
	for name, tc := range map[string]struct {
		body    string
		field   string
		message string // in the error's message, when set
	}{
		"None":             {`{}`, "jti", ""},
		"Two":              {`{"jti": "a", "session_id": "s"}`, "session_id", ""},
		"Unknown":          {`{"user_id": "u"}`, "user_id", ""},
		"Empty":            {`{"jti": ""}`, "jti", ""},
		"NotAString":       {`{"automation_id": 7}`, "automation_id", ""},
		"BadTime":          {`{"issued_before": "yesterday"}`, "issued_before", ""},
		"FutureTime":       {`{"issued_before": "2999-01-01T00:00:00Z"}`, "issued_before", ""},
		"ExpiresWithoutID": {`{"session_id": "s", "expires_at": "2999-01-01T00:00:00Z"}`, "expires_at", ""},
		// Its expiry would be past year 9999: stored, it answered 201
		// without a body, was left out of the audit trail and broke the
		// listing for good.
		"ExpiresTooLate": {`{"jti": "a", "expires_at": "9999-12-31T23:59:59Z"}`, "expires_at", ""},
		"SubjectEmpty":   {`{"subject": ""}`, "subject", "subject must be a non-empty string"},
		"SubjectAndJTI":  {`{"jti": "a", "subject": "alice"}`, "subject", "not both jti and subject"},
		"SubjectAndTime": {`{"subject": "alice", "issued_before": "2020-01-01T00:00:00Z"}`, "issued_before", "not both subject and issued_before"},
		"SubjectNUL":     {`{"subject": "ali\u0000ce"}`, "subject", "NUL"},
		"SubjectControl": {`{"subject": "ali\nce"}`, "subject", "without control characters"},
		"SubjectTooLong": {`{"subject": "` + strings.Repeat("é", 128) + `"}`, "subject", "at most 255 bytes"},
		"JTIControl":     {`{"jti": "a\u001b"}`, "jti", "without control characters"},
	} {
		t.Run(name, func(t *testing.T) {
			r := b.Do("POST", "/v1/revocations", b.Owner(), tc.body)
			e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
			fields := e["details"].(map[string]any)["fields"].([]any)
			require.Equal(t, tc.field, fields[0].(map[string]any)["field"], string(r.Raw))
			require.Contains(t, e["message"], tc.message)
		})
	}
	list := b.Do("GET", "/v1/revocations", b.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	require.Empty(t, list.Body["revocations"], "nothing was revoked")
	require.Equal(t, http.StatusOK, b.Do("GET", sessionProbe(apptest.Session), b.Sandbox(), nil).Status)
}

// sessionCookie signs person in on sb with a new browser and returns the
// console session cookie's value.
func sessionCookie(t *testing.T, sb *signInBundle, person string) string {
	t.Helper()
	br := newBrowser(t)
	resp, page := sb.signIn(t, br, person)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	u, err := url.Parse(sb.URL)
	require.NoError(t, err)
	for _, c := range br.Jar.Cookies(u) {
		if c.Name == signin.SessionCookie {
			return c.Value
		}
	}
	t.Fatal("no console session cookie")
	return ""
}

// TestRevocation_Subject revokes one person of an organization by their
// subject through one API process: their user token, a service token
// with their subject and their console session are refused (401
// token_revoked) there at once and on the other process within its
// refresh, where their token's open event stream ends. Another person's
// token and session, the same person's token in another organization, and
// their token and console session issued after the cut-off keep working.
func TestRevocation_Subject(t *testing.T) {
	t.Parallel()
	// Person A (signintest.Admin) and person B (signintest.Member), both
	// admins of the organization.
	admin := map[string]any{"tenant": apptest.Org, "groups": []string{"admin"}}
	sb := startSignInWith(t, map[string]map[string]any{signintest.Admin: admin, signintest.Member: admin})
	api2 := sb.secondProcess(t)
	a, b := signintest.Admin, signintest.Member
	// A route every kind of token may call, and one for console sessions.
	const probe, consoleProbe = "/v1/actions/bootstrap-guide", "/v1/invocations"
	token := func(org, sub string, kind auth.Kind, role auth.Role) string {
		return sb.Token(auth.Claims{Org: org, Kind: kind, Role: role, RegisteredClaims: jwt.RegisteredClaims{Subject: sub}})
	}
	userA := token(apptest.Org, a, auth.KindUser, auth.RoleMember)
	serviceA := token(apptest.Org, a, auth.KindService, "")
	consoleA := sessionCookie(t, sb, a)
	userB := token(apptest.Org, b, auth.KindUser, auth.RoleMember)
	consoleB := sessionCookie(t, sb, b)
	elsewhereA := token("org-2", a, auth.KindUser, auth.RoleMember)
	for _, api := range []*apptest.Bundle{sb.Bundle, api2} {
		for _, tok := range []string{userA, serviceA, userB, elsewhereA} {
			require.Equal(t, http.StatusOK, api.Do("GET", probe, tok, nil).Status)
		}
		for _, ck := range []string{consoleA, consoleB} {
			status, body := withCookie(t, api.URL+consoleProbe, ck)
			require.Equal(t, http.StatusOK, status, body)
		}
	}
	stream := api2.Stream("/v1/events", userA)

	r := sb.Do("POST", "/v1/revocations", sb.Owner(), map[string]string{"subject": a})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, a, r.Body["subject"])
	require.Nil(t, r.Body["jti"])
	require.Nil(t, r.Body["session_id"])
	require.Nil(t, r.Body["expires_at"], "no auth.max_lifetime: kept")
	cut, err := time.Parse(time.RFC3339, r.Body["issued_before"].(string))
	require.NoError(t, err)

	// The revoking process refuses at once, the other within its refresh.
	for _, tok := range []string{userA, serviceA} {
		requireAPIError(t, sb.Do("GET", probe, tok, nil), http.StatusUnauthorized, "token_revoked")
	}
	status, body := withCookie(t, sb.URL+consoleProbe, consoleA)
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.Contains(t, body, "token_revoked")
	require.True(t, stream.Ended(revocationWait), "the revoked person's event stream ends")
	untilRefused(t, api2, probe, userA)
	requireAPIError(t, api2.Do("GET", probe, serviceA, nil), http.StatusUnauthorized, "token_revoked")
	status, body = withCookie(t, api2.URL+consoleProbe, consoleA)
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.Contains(t, body, "token_revoked")

	// Another person, and the same person elsewhere, keep working.
	for _, api := range []*apptest.Bundle{sb.Bundle, api2} {
		for _, tok := range []string{userB, elsewhereA} {
			require.Equal(t, http.StatusOK, api.Do("GET", probe, tok, nil).Status)
		}
		status, body := withCookie(t, api.URL+consoleProbe, consoleB)
		require.Equal(t, http.StatusOK, status, body)
	}

	// Issued at the cut-off or later: a token, and a new sign-in.
	later := signed(t, sb.Bundle, jwt.MapClaims{"org": apptest.Org, "sub": a, "kind": "user", "role": "member",
		"iat": cut.Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	time.Sleep(time.Until(cut))
	consoleLater := sessionCookie(t, sb, a)
	for _, api := range []*apptest.Bundle{sb.Bundle, api2} {
		require.Equal(t, http.StatusOK, api.Do("GET", probe, later, nil).Status)
		status, body := withCookie(t, api.URL+consoleProbe, consoleLater)
		require.Equal(t, http.StatusOK, status, body)
	}

	list := api2.Do("GET", "/v1/revocations", sb.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	require.Len(t, list.Body["revocations"], 1)
	require.Equal(t, a, list.Body["revocations"].([]any)[0].(map[string]any)["subject"])
	owner2 := sb.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	list = sb.Do("GET", "/v1/revocations", owner2, nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	require.Empty(t, list.Body["revocations"])
}
