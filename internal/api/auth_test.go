package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

func TestAuth_InvalidTokensAreUnauthorized(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	sandbox := auth.Claims{Org: apptest.Org, Kind: auth.KindSandbox, SessionID: apptest.Session,
		RegisteredClaims: jwt.RegisteredClaims{Subject: "sandbox-1"}}
	expired, err := auth.Mint(b.Secret, sandbox, -time.Hour)
	require.NoError(t, err)
	otherSecret, err := auth.Mint("another-secret-0123456789abcdef", sandbox, time.Hour)
	require.NoError(t, err)
	noneClaims := sandbox
	noneClaims.ExpiresAt = jwt.NewNumericDate(time.Now().Add(time.Hour))
	algNone, err := jwt.NewWithClaims(jwt.SigningMethodNone, noneClaims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, noneClaims).SignedString([]byte(b.Secret))
	require.NoError(t, err)
	noExpiry, err := jwt.NewWithClaims(jwt.SigningMethodHS256, sandbox).SignedString([]byte(b.Secret))
	require.NoError(t, err)
	badKind, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"org": apptest.Org, "sub": "x", "kind": "root", "session_id": apptest.Session, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(b.Secret))
	require.NoError(t, err)
	noOrg, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "x", "kind": "sandbox", "session_id": apptest.Session, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(b.Secret))
	require.NoError(t, err)

	invokeBody := map[string]any{"integration": "slack", "action": "send_message", "params": message}
	invokePath := "/v1/sessions/" + apptest.Session + "/actions/invoke"
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"MissingToken", nil},
		{"EmptyBearer", []string{"Authorization", "Bearer "}},
		{"BasicScheme", []string{"Authorization", "Basic dXNlcjpwYXNz"}},
		{"GarbageToken", []string{"Authorization", "Bearer not.a.jwt"}},
		{"ExpiredToken", []string{"Authorization", "Bearer " + expired}},
		{"OtherSecret", []string{"Authorization", "Bearer " + otherSecret}},
		{"AlgNone", []string{"Authorization", "Bearer " + algNone}},
		{"OtherAlgorithm", []string{"Authorization", "Bearer " + hs512}},
		{"NoExpiry", []string{"Authorization", "Bearer " + noExpiry}},
		{"UnknownKind", []string{"Authorization", "Bearer " + badKind}},
		{"NoOrg", []string{"Authorization", "Bearer " + noOrg}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireAPIError(t, b.Do("POST", invokePath, "", invokeBody, tc.headers...), http.StatusUnauthorized, "unauthorized")
			requireAPIError(t, b.Do("GET", "/v1/invocations", "", nil, tc.headers...), http.StatusUnauthorized, "unauthorized")
			requireAPIError(t, b.Do("POST", "/v1/envelopes", "", envelope("e-"+tc.name, nil), tc.headers...), http.StatusUnauthorized, "unauthorized")
			requireAPIError(t, b.Do("PUT", "/v1/credentials/slack", "", map[string]string{"token": "x"}, tc.headers...), http.StatusUnauthorized, "unauthorized")
		})
	}
	require.Zero(t, invocationTotal(t, b))
	require.Empty(t, b.Slack.Requests())

	t.Run("SchemeIsCaseInsensitive", func(t *testing.T) {
		r := b.Do("GET", "/v1/invocations", "", nil, "Authorization", "bearer "+b.Owner())
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		r = b.Do("GET", "/v1/invocations", "", nil, "Authorization", "BEARER "+b.Owner())
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	})
}

func TestAuth_WrongKindOrRoleIsForbidden(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-original")
	invokeBody := map[string]any{"integration": "slack", "action": "send_message", "params": message}
	sessionPath := "/v1/sessions/" + apptest.Session + "/actions"
	otherSandbox := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-2"})

	t.Run("UserTokenOnInvoke", func(t *testing.T) {
		for _, tok := range []string{b.Owner(), b.Admin(), b.Member()} {
			requireAPIError(t, b.Do("POST", sessionPath+"/invoke", tok, invokeBody), http.StatusForbidden, "forbidden")
		}
	})
	t.Run("ServiceTokenOnSessionRoutes", func(t *testing.T) {
		requireAPIError(t, b.Do("POST", sessionPath+"/invoke", b.Service(), invokeBody), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("GET", sessionPath+"/available", b.Service(), nil), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("GET", sessionPath+"/invocations", b.Service(), nil), http.StatusForbidden, "forbidden")
	})
	t.Run("SandboxOfAnotherSession", func(t *testing.T) {
		requireAPIError(t, b.Do("POST", sessionPath+"/invoke", otherSandbox, invokeBody), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("GET", sessionPath+"/available", otherSandbox, nil), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("GET", sessionPath+"/invocations", otherSandbox, nil), http.StatusForbidden, "forbidden")
	})
	t.Run("SandboxOnEnvelopes", func(t *testing.T) {
		requireAPIError(t, b.Do("POST", "/v1/envelopes", b.Sandbox(), envelope("from-sandbox", nil)), http.StatusForbidden, "forbidden")
	})
	t.Run("UserOnEnvelopes", func(t *testing.T) {
		requireAPIError(t, b.Do("POST", "/v1/envelopes", b.Owner(), envelope("from-owner", nil)), http.StatusForbidden, "forbidden")
	})
	t.Run("SandboxOnOrgInbox", func(t *testing.T) {
		requireAPIError(t, b.Do("GET", "/v1/invocations", b.Sandbox(), nil), http.StatusForbidden, "forbidden")
	})
	t.Run("MemberChangesPolicy", func(t *testing.T) {
		modes := map[string]string{"slack:send_message": "allow"}
		requireAPIError(t, b.Do("PUT", "/v1/action-modes", b.Member(), modes), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("PUT", "/v1/automations/automation-1/action-modes", b.Member(), modes), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("PUT", "/v1/credentials/slack", b.Member(), map[string]string{"token": "xoxb-member"}), http.StatusForbidden, "forbidden")
		for _, tok := range []string{b.Sandbox(), b.Service()} {
			requireAPIError(t, b.Do("PUT", "/v1/action-modes", tok, modes), http.StatusForbidden, "forbidden")
			requireAPIError(t, b.Do("PUT", "/v1/credentials/slack", tok, map[string]string{"token": "xoxb-other"}), http.StatusForbidden, "forbidden")
			requireAPIError(t, b.Do("GET", "/v1/credentials", tok, nil), http.StatusForbidden, "forbidden")
		}
	})

	require.Zero(t, invocationTotal(t, b))
	require.Empty(t, b.Do("GET", "/v1/action-modes", b.Owner(), nil).Body)
	require.Empty(t, b.Do("GET", "/v1/automations/automation-1/action-modes", b.Owner(), nil).Body)

	// The credential is still the owner's: a run sends the original token.
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	reqs := b.Slack.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "Bearer xoxb-original", reqs[0].Authorization)
}

func TestAuth_OtherOrgIsNotFound(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	env := postEnvelope(t, b, envelope("org-1-envelope", nil), http.StatusCreated)
	envID := env["action_id"].(string)

	owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	service2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindService, AutomationID: "automation-1"})
	sandbox2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: apptest.Session})

	for _, invID := range []string{id, envID} {
		requireAPIError(t, b.Do("GET", "/v1/invocations/"+invID, owner2, nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("GET", "/v1/invocations/"+invID, sandbox2, nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("POST", "/v1/invocations/"+invID+"/approve", owner2, map[string]string{"mode": "always"}), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("POST", "/v1/invocations/"+invID+"/deny", owner2, map[string]string{"reason": "no"}), http.StatusNotFound, "not_found")
	}
	requireAPIError(t, b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id, sandbox2, nil), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id+"/approve", owner2, map[string]string{"mode": "once"}), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id+"/deny", owner2, nil), http.StatusNotFound, "not_found")
	for _, tok := range []string{owner2, service2} {
		requireAPIError(t, b.Do("GET", "/v1/envelopes/"+envID, tok, nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("DELETE", "/v1/envelopes/"+envID, tok, nil), http.StatusNotFound, "not_found")
	}

	// Org 2 sees an empty inbox and session.
	r := b.Do("GET", "/v1/invocations", owner2, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, float64(0), r.Body["total"])
	r = b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations", sandbox2, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Empty(t, r.Body["invocations"])

	// Nothing changed in org 1.
	require.Equal(t, "pending", b.Invocation(id)["status"])
	require.Equal(t, "pending", b.Invocation(envID)["status"])
	require.Equal(t, "pending", jobState(t, b, id))
	require.Equal(t, "pending", jobState(t, b, envID))
	require.Empty(t, b.Do("GET", "/v1/action-modes", owner2, nil).Body)
	require.Empty(t, b.Do("GET", "/v1/automations/automation-1/action-modes", owner2, nil).Body)
}
