package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/api"
	"github.com/outboxd/outboxd/internal/domain/admin"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/feed"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/policy"
)

// fakeSettings, fakeAdmin and fakeFeeds stand in for the services, so that
// the API's decoding and error mapping are tested without Postgres. The
// embedded interfaces panic on any method a test does not expect.
type fakeSettings struct {
	api.Settings
	putModes func(raw map[string]string) (policy.Modes, error)
}

func (f *fakeSettings) PutModesOf(_ context.Context, _, _, _ string, _ auth.SourceClaim, raw map[string]string, _ string) (policy.Modes, error) {
	return f.putModes(raw)
}

type fakeAdmin struct {
	api.Admin
	retried []string
}

func (f *fakeAdmin) RetryDeadLetters(_ context.Context, _, _ string, ids []string, _ auth.SourceClaim) ([]admin.BatchResult, error) {
	f.retried = append(f.retried, ids...)
	return []admin.BatchResult{{ID: ids[0], Status: "not_found", Error: "no such invocation"}}, nil
}

type fakeFeeds struct{ api.Feeds }

func (fakeFeeds) Resume(context.Context, invocation.Cursor) (invocation.Cursor, error) {
	return invocation.Cursor{}, feed.ErrUnknownPosition
}

func fakeServer(t *testing.T, deps *api.Deps) (http.Handler, string) {
	t.Helper()
	const secret = "a-test-secret-of-enough-length-0123456789"
	v, err := auth.NewVerifier(secret)
	require.NoError(t, err)
	deps.Verifier = v
	token, err := auth.Mint(secret, auth.Claims{Org: "org-1", Kind: auth.KindUser, Role: auth.RoleOwner,
		RegisteredClaims: jwt.RegisteredClaims{Subject: "alice"}}, time.Hour)
	require.NoError(t, err)
	return api.New(deps).Handler(), token
}

func fakeCall(t *testing.T, h http.Handler, token, method, path, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func TestFakes_SettingsBadInputAndValidation(t *testing.T) {
	called := 0
	h, token := fakeServer(t, &api.Deps{Settings: &fakeSettings{putModes: func(map[string]string) (policy.Modes, error) {
		called++
		return nil, &errs.ValidationError{Message: "invalid action modes", Fields: []executors.FieldError{{Field: "slack", Message: "bad key"}}}
	}}})
	for _, body := range []string{"", "{", "null", `{"a:b":"allow"} {}`, `{"a:b":1}`} {
		status, out := fakeCall(t, h, token, "PUT", "/v1/action-modes", body)
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Equal(t, "invalid_json", errorCode(out), body)
	}
	require.Zero(t, called, "bad JSON reaches no service")
	status, out := fakeCall(t, h, token, "PUT", "/v1/action-modes", `{"slack":"allow"}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_request", errorCode(out))
	require.Contains(t, out["error"].(map[string]any)["details"], "fields")
}

func TestFakes_DeadLetterNotFoundAndFeedPosition(t *testing.T) {
	adm := &fakeAdmin{}
	h, token := fakeServer(t, &api.Deps{Admin: adm, Feeds: fakeFeeds{}})
	status, out := fakeCall(t, h, token, "POST", "/v1/dead-letters/x/retry", "")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "not_found", errorCode(out))
	require.Equal(t, []string{"x"}, adm.retried)

	status, out = fakeCall(t, h, token, "POST", "/v1/dead-letters/retry", `{"ids":["a"],"extra":1}`)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_json", errorCode(out))

	status, out = fakeCall(t, h, token, "GET", "/v1/events", "", "Last-Event-ID", "not-a-position")
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, "invalid_request", errorCode(out))
}
