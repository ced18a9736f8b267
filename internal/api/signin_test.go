package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/api"
	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/auth/signin/signintest"
)

// lockedBuffer collects a process's logs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// signInBundle is an outboxd whose console signs people in with a real
// OpenID provider.
type signInBundle struct {
	*apptest.Bundle
	provider *signintest.Provider
	logs     *lockedBuffer
	// skew moves the sign-in's clock forward.
	skew *atomic.Int64
}

func startSignIn(t *testing.T) *signInBundle {
	return startSignInWith(t, map[string]map[string]any{
		// The role comes from a list of groups.
		signintest.Admin: {"tenant": apptest.Org, "groups": []string{"staff", "admin"}},
		// No role and no default role: not a console user.
		signintest.Member: {"tenant": apptest.Org},
	})
}

// startSignInWith is startSignIn with the provider's people's claims.
func startSignInWith(t *testing.T, claims map[string]map[string]any) *signInBundle {
	provider := signintest.Start(t, claims)
	sb := &signInBundle{provider: provider, logs: &lockedBuffer{}, skew: &atomic.Int64{}}
	sb.Bundle = apptest.Start(t, &apptest.Options{
		Logs: sb.logs,
		Auth: auth.Config{IdP: auth.IdPConfig{
			Issuer: provider.Issuer, Audience: []string{"outboxd"},
			Claims:   auth.ClaimNames{Org: "tenant", Role: "groups"},
			Defaults: auth.ClaimDefaults{Kind: auth.KindUser},
		}},
		Console: signin.Config{
			ClientID: signintest.ClientID, ClientSecret: signintest.ClientSecret,
			Scopes: []string{"openid", "email", signintest.Scope},
			Now:    func() time.Time { return time.Now().Add(time.Duration(sb.skew.Load())) },
		},
	})
	provider.AllowOrigin(sb.URL)
	return sb
}

// secondProcess starts another API process on sb's database and
// secrets.key, with the same identity provider and console sign-in: a
// session cookie or token of one works on the other.
func (sb *signInBundle) secondProcess(t *testing.T) *apptest.Bundle {
	return apptest.Start(t, &apptest.Options{
		Role: app.RoleAPI, DatabaseURL: sb.DBURL, SecretsKey: sb.Config.SecretsKey,
		Auth: auth.Config{IdP: auth.IdPConfig{
			Issuer: sb.provider.Issuer, Audience: []string{"outboxd"},
			Claims:   auth.ClaimNames{Org: "tenant", Role: "groups"},
			Defaults: auth.ClaimDefaults{Kind: auth.KindUser},
		}},
		Console: signin.Config{ClientID: signintest.ClientID, ClientSecret: signintest.ClientSecret, Scopes: []string{"openid", "email", signintest.Scope}},
	})
}

// browser is a cookie-keeping HTTP client that records the answers it was
// redirected by.
type browser struct {
	*http.Client
	hops []*http.Response
}

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	br := &browser{}
	br.Client = &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		br.hops = append(br.hops, req.Response)
		return nil
	}}
	return br
}

// hop is the answer of the request to u (without its query) that
// redirected.
func (br *browser) hop(u string) *http.Response {
	for _, h := range br.hops {
		if at := *h.Request.URL; at.RawQuery == "" && at.String() == u || (&url.URL{Scheme: at.Scheme, Host: at.Host, Path: at.Path}).String() == u {
			return h
		}
	}
	return nil
}

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// signIn goes through the provider's login page as user and returns the
// last answer: the console's page when the sign-in worked.
func (sb *signInBundle) signIn(t *testing.T, br *browser, user string) (*http.Response, string) {
	t.Helper()
	resp, err := br.Get(sb.URL + "/auth/login")
	require.NoError(t, err)
	page := readAll(t, resp)
	m := loginID.FindStringSubmatch(page)
	require.NotNil(t, m, "the provider's login page: %s", page)
	resp, err = br.PostForm(sb.provider.URL+"/login/username", url.Values{
		"id": {m[1]}, "username": {sb.provider.Username(user)}, "password": {signintest.Password},
	})
	require.NoError(t, err)
	return resp, readAll(t, resp)
}

// withCookie GETs u with only a console session cookie of value.
func withCookie(t *testing.T, u, value string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: signin.SessionCookie, Value: value})
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp.StatusCode, readAll(t, resp)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

func cookieOf(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// call sends a request with br's cookies, and headers as name, value pairs.
func (br *browser) call(t *testing.T, method, u string, headers ...string) (int, map[string]any) {
	t.Helper()
	return br.send(t, method, u, "", headers...)
}

// send is call with a JSON body (none when empty).
func (br *browser) send(t *testing.T, method, u, reqBody string, headers ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if reqBody != "" {
		rd = strings.NewReader(reqBody)
	}
	req, err := http.NewRequest(method, u, rd)
	require.NoError(t, err)
	if reqBody != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := br.Do(req)
	require.NoError(t, err)
	var body map[string]any
	raw := readAll(t, resp)
	if raw != "" {
		require.NoError(t, json.Unmarshal([]byte(raw), &body), raw)
	}
	return resp.StatusCode, body
}

func signInErrorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestConsoleSignIn_Flow signs in through a real OpenID provider's login
// page: the mapped organization and role, the cookie's attributes, the
// CSRF token on mutating requests, forged and expired cookies, signing
// out, and nothing secret in the logs.
func TestConsoleSignIn_Flow(t *testing.T) {
	t.Parallel()
	sb := startSignIn(t)
	br := newBrowser(t)

	resp, page := sb.signIn(t, br, signintest.Admin)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Equal(t, sb.URL+"/console/", resp.Request.URL.String(), "the browser lands in the console, the code gone from the address bar")

	login := br.hop(sb.URL + "/auth/login")
	require.NotNil(t, login)
	to, err := url.Parse(login.Header.Get("Location"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(to.String(), sb.provider.Issuer+"/"), to.String())
	q := to.Query()
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.NotEmpty(t, q.Get("code_challenge"))
	require.NotEmpty(t, q.Get("state"))
	require.NotEmpty(t, q.Get("nonce"))
	require.Equal(t, sb.URL+"/auth/callback", q.Get("redirect_uri"), "derived from the request")
	require.NotContains(t, to.String(), signintest.ClientSecret)
	flowCk := cookieOf(login, "outboxd_signin")
	require.NotNil(t, flowCk)
	require.True(t, flowCk.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, flowCk.SameSite)

	callback := br.hop(sb.URL + "/auth/callback")
	require.NotNil(t, callback)
	require.Equal(t, http.StatusSeeOther, callback.StatusCode)
	session := cookieOf(callback, signin.SessionCookie)
	require.NotNil(t, session)
	require.True(t, session.HttpOnly)
	require.False(t, session.Secure, "outboxd is reached over http here")
	require.Equal(t, http.SameSiteLaxMode, session.SameSite)
	require.Equal(t, "/", session.Path)
	require.Positive(t, session.MaxAge)
	require.LessOrEqual(t, session.MaxAge, 3600, "no longer than the ID token (1h at this provider)")
	cleared := cookieOf(callback, "outboxd_signin")
	require.NotNil(t, cleared)
	require.Negative(t, cleared.MaxAge, "the sign-in's cookie is cleared")

	status, me := br.call(t, "GET", sb.URL+"/auth/session")
	require.Equal(t, http.StatusOK, status, me)
	require.Equal(t, apptest.Org, me["org"])
	require.Equal(t, "admin", me["role"], "the highest role of the groups claim")
	require.Equal(t, "user", me["kind"])
	require.Equal(t, signintest.Admin, me["sub"])
	csrf, _ := me["csrf_token"].(string)
	require.NotEmpty(t, csrf)

	t.Run("CookieAuthenticatesTheAPI", func(t *testing.T) {
		status, body := br.call(t, "GET", sb.URL+"/v1/invocations")
		require.Equal(t, http.StatusOK, status, body)
		status, body = br.call(t, "GET", sb.URL+"/v1/queues")
		require.Equal(t, http.StatusOK, status, body, "an admin route: the mapped role is admin")
	})

	t.Run("MutatingNeedsTheCSRFToken", func(t *testing.T) {
		status, body := br.call(t, "POST", sb.URL+"/v1/queues/pause")
		require.Equal(t, http.StatusForbidden, status, body)
		require.Equal(t, "csrf_token_invalid", signInErrorCode(body))
		status, body = br.call(t, "POST", sb.URL+"/v1/queues/pause", signin.CSRFHeader, "not-the-token")
		require.Equal(t, http.StatusForbidden, status, body)
		require.Equal(t, false, sb.Do("GET", "/v1/queues", sb.Owner(), nil).Body["paused"], "refused requests changed nothing")

		status, body = br.call(t, "POST", sb.URL+"/v1/queues/pause", signin.CSRFHeader, csrf)
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, true, sb.Do("GET", "/v1/queues", sb.Owner(), nil).Body["paused"])
		status, body = br.call(t, "POST", sb.URL+"/v1/queues/resume", signin.CSRFHeader, csrf)
		require.Equal(t, http.StatusOK, status, body)
	})

	t.Run("BearerTokenNeedsNoCSRFToken", func(t *testing.T) {
		status, body := br.call(t, "POST", sb.URL+"/v1/queues/resume", "Authorization", "Bearer "+sb.Admin())
		require.Equal(t, http.StatusOK, status, body)
	})

	t.Run("ForgedCookieRefused", func(t *testing.T) {
		for _, value := range []string{"forged", session.Value[:len(session.Value)-4] + "AAAA"} {
			status, body := withCookie(t, sb.URL+"/v1/invocations", value)
			require.Equal(t, http.StatusUnauthorized, status, body)
			require.Contains(t, body, "invalid console session")
			status, body = withCookie(t, sb.URL+"/auth/session", value)
			require.Equal(t, http.StatusUnauthorized, status, body)
			require.Contains(t, body, `"session_invalid"`, "the console can say why")
		}
	})

	t.Run("ExpiredCookieRefused", func(t *testing.T) {
		// The sign-in's clock only: the ID token is valid for an hour.
		sb.skew.Store(int64(2 * time.Hour))
		defer sb.skew.Store(0)
		status, body := br.call(t, "GET", sb.URL+"/v1/invocations")
		require.Equal(t, http.StatusUnauthorized, status, body)
		require.Contains(t, body["error"].(map[string]any)["message"], "expired")
		status, body = br.call(t, "GET", sb.URL+"/auth/session")
		require.Equal(t, http.StatusUnauthorized, status, body)
		require.Equal(t, "session_expired", signInErrorCode(body), "the console can say why")
	})

	t.Run("SignOut", func(t *testing.T) {
		status, body := br.call(t, "POST", sb.URL+"/auth/logout")
		require.Equal(t, http.StatusForbidden, status, body, "signing out takes the CSRF token")
		status, body = br.call(t, "POST", sb.URL+"/auth/logout", signin.CSRFHeader, csrf)
		require.Equal(t, http.StatusOK, status, body)
		end, err := url.Parse(body["end_session_url"].(string))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(end.String(), sb.provider.Issuer+"/"), end.String())
		require.Equal(t, signintest.ClientID, end.Query().Get("client_id"))
		require.Equal(t, sb.URL+"/console/", end.Query().Get("post_logout_redirect_uri"))
		require.Empty(t, end.Query().Get("id_token_hint"), "no token in a URL")

		status, body = br.call(t, "GET", sb.URL+"/auth/session")
		require.Equal(t, http.StatusUnauthorized, status, body, "the cookie is cleared")
		require.Equal(t, "no_session", signInErrorCode(body))
		status, _ = br.call(t, "GET", sb.URL+"/v1/invocations")
		require.Equal(t, http.StatusUnauthorized, status)
		// A copy of the cookie taken before signing out is refused too:
		// the session's id is revoked until it would have expired.
		status, copied := withCookie(t, sb.URL+"/v1/invocations", session.Value)
		require.Equal(t, http.StatusUnauthorized, status, copied)
		require.Contains(t, copied, "token_revoked")
		status, copied = withCookie(t, sb.URL+"/auth/session", session.Value)
		require.Equal(t, http.StatusUnauthorized, status, copied, "nor does the copy get the session's CSRF token")
		require.Contains(t, copied, `"session_revoked"`)
		revs := sb.Do("GET", "/v1/revocations", sb.Owner(), nil)
		require.Len(t, revs.Body["revocations"], 1, string(revs.Raw))
		rev := revs.Body["revocations"].([]any)[0].(map[string]any)
		require.Equal(t, signintest.Admin, rev["revoked_by"])
		require.NotEmpty(t, rev["jti"])
		require.NotNil(t, rev["expires_at"], "dropped once the session would have expired")

		// The provider takes the sign-out and sends the browser back.
		resp, err := br.Get(end.String())
		require.NoError(t, err)
		readAll(t, resp)
		require.Equal(t, sb.URL+"/console/", resp.Request.URL.String())
	})

	t.Run("RevocationEndsASession", func(t *testing.T) {
		// Another sign-in, ended by a revocation of every token issued
		// before a time.
		other := newBrowser(t)
		resp, page := sb.signIn(t, other, signintest.Admin)
		require.Equal(t, http.StatusOK, resp.StatusCode, page)
		status, body := other.call(t, "GET", sb.URL+"/v1/invocations")
		require.Equal(t, http.StatusOK, status, body)
		cutoff := time.Now().Add(time.Second).UTC().Truncate(time.Second)
		time.Sleep(time.Until(cutoff))
		r := sb.Do("POST", "/v1/revocations", sb.Owner(), map[string]string{"issued_before": cutoff.Format(time.RFC3339)})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		status, body = other.call(t, "GET", sb.URL+"/v1/invocations")
		require.Equal(t, http.StatusUnauthorized, status, body, "the revoked session is refused")
		status, body = other.call(t, "GET", sb.URL+"/auth/session")
		require.Equal(t, http.StatusUnauthorized, status, body, "the console is not told it is signed in")
		require.Equal(t, "session_revoked", signInErrorCode(body))
	})

	logs := sb.logs.String()
	require.NotContains(t, logs, signintest.ClientSecret)
	require.NotContains(t, logs, session.Value)
	require.NotContains(t, logs, "eyJ", "no JWT in the logs")
}

// TestConsoleSignIn_RequestForAnotherPerson: a console tab names the
// person it read from GET /auth/session in X-Outboxd-Subject; once the
// browser's shared cookie is another person's (signed in elsewhere), the
// tab's reads and its approval are refused (401 session_changed) rather
// than done as that other person, even with the new session's CSRF token.
func TestConsoleSignIn_RequestForAnotherPerson(t *testing.T) {
	t.Parallel()
	// Two admins of one organization: either could approve.
	admin := map[string]any{"tenant": apptest.Org, "groups": []string{"admin"}}
	sb := startSignInWith(t, map[string]map[string]any{signintest.Admin: admin, signintest.Member: admin})
	br := newBrowser(t)
	subject := func(sub string) string { return url.PathEscape(apptest.Org) + "/" + url.PathEscape(sub) }
	csrfOf := func() string {
		status, me := br.call(t, "GET", sb.URL+"/auth/session")
		require.Equal(t, http.StatusOK, status, me)
		return me["csrf_token"].(string)
	}

	resp, page := sb.signIn(t, br, signintest.Admin)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	csrfA := csrfOf()
	status, body := br.call(t, "GET", sb.URL+"/v1/invocations", api.SubjectHeader, subject(signintest.Admin))
	require.Equal(t, http.StatusOK, status, body, "the request names the signed-in person")

	sb.StoreSlackToken("xoxb-another-person")
	r := sb.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "ship it"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	approve := sb.URL + "/v1/invocations/" + r.Body["invocation_id"].(string) + "/approve"

	// Another person signs in with the same browser: the cookie is theirs.
	resp, page = sb.signIn(t, br, signintest.Member)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	csrfB := csrfOf()

	for name, headers := range map[string][]string{
		"read":                     {},
		"approve with its token":   {signin.CSRFHeader, csrfA},
		"approve with the new one": {signin.CSRFHeader, csrfB},
	} {
		method, u, reqBody := "POST", approve, `{"mode":"once"}`
		if name == "read" {
			method, u, reqBody = "GET", sb.URL+"/v1/invocations", ""
		}
		for _, named := range []string{subject(signintest.Admin), "nonsense", "%zz/" + signintest.Member} {
			status, body := br.send(t, method, u, reqBody, append([]string{api.SubjectHeader, named}, headers...)...)
			require.Equal(t, http.StatusUnauthorized, status, "%s for %s: %v", name, named, body)
			require.Equal(t, "session_changed", signInErrorCode(body), name)
		}
	}
	require.Equal(t, "pending", sb.Invocation(r.Body["invocation_id"].(string))["status"], "no refused approval went through")
	require.Nil(t, sb.Invocation(r.Body["invocation_id"].(string))["approved_by"])

	status, body = br.call(t, "GET", sb.URL+"/v1/invocations", "Authorization", "Bearer "+sb.Admin(), api.SubjectHeader, subject(signintest.Admin)+"x")
	require.Equal(t, http.StatusOK, status, body, "a bearer token is its own person: the header is not read")
	status, body = br.call(t, "GET", sb.URL+"/v1/invocations")
	require.Equal(t, http.StatusOK, status, body, "a request naming no one is the cookie's")
	status, body = br.send(t, "POST", approve, `{"mode":"once"}`, signin.CSRFHeader, csrfB, api.SubjectHeader, subject(signintest.Member))
	require.Equal(t, http.StatusOK, status, body, "the person the cookie signs in, named, approves")
	require.Equal(t, signintest.Member, sb.Invocation(r.Body["invocation_id"].(string))["approved_by"])
}

// TestConsoleSignIn_ProviderClockAhead: with the provider's clock ahead
// of outboxd's, the ID token's iat is in outboxd's future; the session
// counts as issued when outboxd made it, so a revocation made afterwards
// ends it.
func TestConsoleSignIn_ProviderClockAhead(t *testing.T) {
	t.Parallel()
	sb := startSignIn(t)
	// outboxd's sign-in runs 10 minutes behind the provider (and behind
	// the revocations' clock, on which the sign-in happened 10 minutes
	// ago).
	sb.skew.Store(int64(-10 * time.Minute))
	br := newBrowser(t)
	resp, page := sb.signIn(t, br, signintest.Admin)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	status, body := br.call(t, "GET", sb.URL+"/v1/invocations")
	require.Equal(t, http.StatusOK, status, body)

	cutoff := time.Now().Add(-5 * time.Minute).UTC().Format(time.RFC3339)
	r := sb.Do("POST", "/v1/revocations", sb.Owner(), map[string]string{"issued_before": cutoff})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	status, body = br.call(t, "GET", sb.URL+"/v1/invocations")
	require.Equal(t, http.StatusUnauthorized, status, body, "the session began before the cut-off")
}

// TestConsoleSignIn_SignOutThatCannotRevokeSaysSo: when the session
// cannot be revoked, signing out still clears the cookie and says the
// session was not ended, rather than claiming it was.
func TestConsoleSignIn_SignOutThatCannotRevokeSaysSo(t *testing.T) {
	t.Parallel()
	sb := startSignIn(t)
	br := newBrowser(t)
	resp, page := sb.signIn(t, br, signintest.Admin)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	status, me := br.call(t, "GET", sb.URL+"/auth/session")
	require.Equal(t, http.StatusOK, status, me)
	_, err := sb.Pool.Exec(context.Background(), `CREATE FUNCTION refuse_revocation() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'no revocations today'; END $$;
		CREATE TRIGGER refuse_revocation BEFORE INSERT ON token_revocations FOR EACH ROW EXECUTE FUNCTION refuse_revocation()`)
	require.NoError(t, err)
	sb.Contract = nil

	status, body := br.call(t, "POST", sb.URL+"/auth/logout", signin.CSRFHeader, me["csrf_token"].(string))
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	require.Equal(t, "sign_out_incomplete", signInErrorCode(body))
	status, _ = br.call(t, "GET", sb.URL+"/auth/session")
	require.Equal(t, http.StatusUnauthorized, status, "the cookie is cleared all the same")
}

// TestConsoleSignIn_Refusals: callbacks that do not continue a sign-in of
// this browser, the provider's refusals and an identity that is no
// console user are clear JSON errors, and set no session.
func TestConsoleSignIn_Refusals(t *testing.T) {
	t.Parallel()
	sb := startSignIn(t)

	// start begins a sign-in without following the provider's redirect,
	// and returns the browser and the state.
	start := func(t *testing.T) (*browser, string) {
		br := newBrowser(t)
		br.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := br.Get(sb.URL + "/auth/login")
		require.NoError(t, err)
		readAll(t, resp)
		require.Equal(t, http.StatusFound, resp.StatusCode)
		to, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		return br, to.Query().Get("state")
	}
	refused := func(t *testing.T, br *browser, query string, status int, code string) map[string]any {
		t.Helper()
		req, err := http.NewRequest("GET", sb.URL+"/auth/callback?"+query, nil)
		require.NoError(t, err)
		resp, err := br.Do(req)
		require.NoError(t, err)
		raw := readAll(t, resp)
		require.Equal(t, status, resp.StatusCode, raw)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.Nil(t, cookieOf(resp, signin.SessionCookie), "no session")
		var body map[string]any
		require.NoError(t, json.Unmarshal([]byte(raw), &body))
		require.Equal(t, code, signInErrorCode(body), raw)
		return body
	}

	t.Run("StateMismatch", func(t *testing.T) {
		br, _ := start(t)
		refused(t, br, "state=another&code=abc", http.StatusBadRequest, "state_mismatch")
	})
	t.Run("NoSignInStarted", func(t *testing.T) {
		// No sign-in cookie, so no PKCE verifier.
		refused(t, newBrowser(t), "state=abc&code=abc", http.StatusBadRequest, "sign_in_not_started")
	})
	t.Run("ForgedSignInCookie", func(t *testing.T) {
		br := newBrowser(t)
		u, _ := url.Parse(sb.URL)
		br.Jar.SetCookies(u, []*http.Cookie{{Name: "outboxd_signin", Value: "forged", Path: "/"}})
		refused(t, br, "state=abc&code=abc", http.StatusBadRequest, "sign_in_not_started")
	})
	t.Run("ProviderError", func(t *testing.T) {
		br, state := start(t)
		body := refused(t, br, "state="+url.QueryEscape(state)+"&error=access_denied&error_description=the+user+said+no", http.StatusForbidden, "provider_refused")
		require.Contains(t, body["error"].(map[string]any)["message"], "access_denied (the user said no)")
	})
	t.Run("CodeNotIssued", func(t *testing.T) {
		br, state := start(t)
		refused(t, br, "state="+url.QueryEscape(state)+"&code=not-a-code", http.StatusForbidden, "code_exchange_refused")
	})
	t.Run("NotAConsoleUser", func(t *testing.T) {
		br := newBrowser(t)
		resp, page := sb.signIn(t, br, signintest.Member)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, page)
		require.Contains(t, page, "not_a_console_user")
		require.Contains(t, page, "invalid role")
		require.Equal(t, "/auth/callback", resp.Request.URL.Path)
		require.Nil(t, cookieOf(resp, signin.SessionCookie))
	})

	logs := sb.logs.String()
	require.Contains(t, logs, "console sign-in refused", "refusals are logged")
	require.NotContains(t, logs, signintest.ClientSecret)
	require.NotContains(t, logs, "eyJ", "no JWT in the logs")
}

// TestConsoleSignIn_NotConfigured: without console.oidc the console is
// told to take a pasted token, and the sign-in routes are 404.
func TestConsoleSignIn_NotConfigured(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(api.New(&api.Deps{}).Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/auth/config")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"oidc":false}`, readAll(t, resp))
	for _, path := range []string{"/auth/login", "/auth/callback", "/auth/session"} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.Contains(t, readAll(t, resp), "sign_in_not_configured")
	}
}
