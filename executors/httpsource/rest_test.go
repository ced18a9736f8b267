package httpsource_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

func TestRESTURL(t *testing.T) {
	t.Parallel()
	r := &httpsource.Request{
		Segments: []string{"issues", "a/b?c", "events"},
		Query:    url.Values{"q": {"is:open x"}, "cursor": {"1"}},
	}
	plain := &httpsource.REST{BaseURL: "https://api.example.com/v1"}
	require.Equal(t, "https://api.example.com/v1/issues/a%2Fb%3Fc/events?cursor=1&q=is%3Aopen+x", plain.URL(r))
	slashed := &httpsource.REST{BaseURL: "https://api.example.com/v1", TrailingSlash: true}
	require.Equal(t, "https://api.example.com/v1/issues/a%2Fb%3Fc/events/?cursor=1&q=is%3Aopen+x", slashed.URL(r))
	require.Equal(t, "https://api.example.com/v1/", slashed.URL(&httpsource.Request{}))
}

func TestRESTDo(t *testing.T) {
	t.Parallel()
	const token = "tok_secret"
	ec := executors.ExecContext{Token: token, IdempotencyKey: "inv_1"}

	// serve starts a server answering status and body, and returns a REST
	// on it whose StatusError records what it was given, and a function
	// returning the requests the server saw so far.
	serve := func(t *testing.T, status int, body string) (*httpsource.REST, func() []*http.Request, *[]string) {
		t.Helper()
		var (
			mu   sync.Mutex
			reqs []*http.Request
		)
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			mu.Lock()
			reqs = append(reqs, req.Clone(context.Background()))
			mu.Unlock()
			w.Header().Set("X-Answer", "yes")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(server.Close)
		client := httpsource.NewClient()
		t.Cleanup(client.CloseIdleConnections)
		var classified []string
		api := &httpsource.REST{
			Provider: "Acme",
			Source:   "acme",
			BaseURL:  server.URL,
			HTTP:     client,
			Header:   map[string]string{"X-Acme-Version": "7"},
			MaxBytes: 16,
			StatusError: func(resp *http.Response, raw []byte, subject, token string) *executors.Error {
				classified = append(classified, string(raw), subject, token)
				return &executors.Error{Code: "refused"}
			},
		}
		seen := func() []*http.Request {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(reqs)
		}
		return api, seen, &classified
	}

	t.Run("ReadHasNoBodyHeadersOrKey", func(t *testing.T) {
		t.Parallel()
		api, seen, _ := serve(t, http.StatusOK, `{"id":1}`)
		ans, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodGet, Segments: []string{"things", "1"}, Subject: "thing 1"})
		require.NoError(t, err)
		require.JSONEq(t, `{"id":1}`, string(ans.Body))
		require.Equal(t, "yes", ans.Header.Get("X-Answer"))
		require.Len(t, seen(), 1)
		req := seen()[0]
		require.Equal(t, http.MethodGet, req.Method)
		require.Equal(t, "/things/1", req.URL.Path)
		require.Equal(t, "Bearer "+token, req.Header.Get("Authorization"))
		require.Equal(t, "application/json", req.Header.Get("Accept"))
		require.Equal(t, "7", req.Header.Get("X-Acme-Version"))
		require.NotContains(t, req.Header, "Content-Type")
		require.NotContains(t, req.Header, httpsource.IdempotencyKeyHeader)
	})

	t.Run("WriteIsJSONWithKey", func(t *testing.T) {
		t.Parallel()
		api, seen, _ := serve(t, http.StatusCreated, `{}`)
		_, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodPost, Segments: []string{"things"}, Body: []byte(`{"a":1}`)})
		require.NoError(t, err)
		req := seen()[0]
		require.Equal(t, "application/json", req.Header.Get("Content-Type"))
		require.Equal(t, "inv_1", req.Header.Get(httpsource.IdempotencyKeyHeader))
		require.Empty(t, req.Header.Get("Idempotency-Key"), "net/http would resend a POST with it")
	})

	t.Run("ProviderHeaderOverridesAccept", func(t *testing.T) {
		t.Parallel()
		api, seen, _ := serve(t, http.StatusOK, `[]`)
		api.Header = map[string]string{"Accept": "application/vnd.acme+json"}
		_, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodGet})
		require.NoError(t, err)
		require.Equal(t, []string{"application/vnd.acme+json"}, seen()[0].Header.Values("Accept"))
	})

	t.Run("NoTokenMakesNoCall", func(t *testing.T) {
		t.Parallel()
		api, seen, _ := serve(t, http.StatusOK, `{}`)
		_, err := api.Do(t.Context(), executors.ExecContext{}, &httpsource.Request{Method: http.MethodGet})
		require.Equal(t, &executors.Error{Code: "not_authed", Message: "no Acme token is available; connect Acme first"}, err)
		require.Empty(t, seen())
	})

	t.Run("RefusalGoesToStatusErrorWhateverItsSize", func(t *testing.T) {
		t.Parallel()
		api, _, classified := serve(t, http.StatusForbidden, strings.Repeat("x", 40))
		_, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodGet, Subject: "thing 1"})
		require.Equal(t, &executors.Error{Code: "refused"}, err)
		require.Equal(t, []string{strings.Repeat("x", 17), "thing 1", token}, *classified)
	})

	t.Run("TooLarge", func(t *testing.T) {
		t.Parallel()
		api, _, _ := serve(t, http.StatusOK, `{"a":"`+strings.Repeat("x", 20)+`"}`)
		_, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodGet, Subject: "thing 1"})
		require.Equal(t, &executors.Error{Code: "response_too_large", Message: "Acme's answer about thing 1 is larger than 16 bytes"}, err)
	})

	t.Run("NotJSON", func(t *testing.T) {
		t.Parallel()
		api, _, _ := serve(t, http.StatusOK, `<html>`)
		_, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodGet})
		require.Equal(t, &executors.Error{Code: "invalid_response", Message: "Acme answered HTTP 200 with a body that is not JSON", Retryable: true}, err)
	})

	t.Run("EmptyIsNotJSONUnlessAllowed", func(t *testing.T) {
		t.Parallel()
		api, _, _ := serve(t, http.StatusNoContent, "")
		_, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodPut, Body: []byte(`{}`)})
		require.Equal(t, "invalid_response", requireExecError(t, err).Code)
		ans, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodPut, Body: []byte(`{}`), AllowEmpty: true})
		require.NoError(t, err)
		require.Equal(t, `{}`, string(ans.Body))
	})

	t.Run("TransportFailure", func(t *testing.T) {
		t.Parallel()
		server := httptest.NewServer(http.NotFoundHandler())
		server.Close()
		api := &httpsource.REST{Provider: "Acme", Source: "acme", BaseURL: server.URL, HTTP: httpsource.NewClient(), MaxBytes: 16}
		_, err := api.Do(t.Context(), ec, &httpsource.Request{Method: http.MethodGet})
		require.Equal(t, "network_error", requireExecError(t, err).Code)
	})
}

// requireExecError asserts err is an *executors.Error and returns it.
func requireExecError(t *testing.T, err error) *executors.Error {
	t.Helper()
	var e *executors.Error
	require.ErrorAs(t, err, &e)
	return e
}
