package httpsource_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestCheckBaseURL(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name    string
		raw     string
		wantErr string
	}{
		{name: "HTTPS", raw: "https://slack.com/api"},
		{name: "HTTPLoopbackWithPort", raw: "http://127.0.0.1:8080"},
		{name: "Unparsable", raw: "http://[::1", wantErr: `providers.slack.base_url is not a valid URL`},
		{name: "OtherScheme", raw: "ftp://slack.com/api", wantErr: `providers.slack.base_url must be an http or https URL`},
		{name: "NoScheme", raw: "slack.com/api", wantErr: `providers.slack.base_url must be an http or https URL`},
		{name: "NoHost", raw: "https:///api", wantErr: `providers.slack.base_url has no host`},
		{name: "Query", raw: "https://slack.com/api?x=1", wantErr: `providers.slack.base_url must not have a query or fragment`},
		{name: "Fragment", raw: "https://slack.com/api#x", wantErr: `providers.slack.base_url must not have a query or fragment`},
		// Appended paths would land in an empty query or fragment too.
		{name: "EmptyQuery", raw: "https://slack.com/api?", wantErr: `providers.slack.base_url must not have a query or fragment`},
		{name: "EmptyFragment", raw: "https://slack.com/api#", wantErr: `providers.slack.base_url must not have a query or fragment`},
		{name: "Credentials", raw: "https://bot:hunter22@slack.com/api", wantErr: `providers.slack.base_url must not carry credentials (user:password@)`},
		// No error shows the URL, or a part of it: a secret in it stays
		// out of the start's error, whatever else is wrong.
		{name: "CredentialsUnparsable", raw: "https://bot:hunter22@[::1/api", wantErr: `providers.slack.base_url is not a valid URL`},
		{name: "CredentialsOtherScheme", raw: "ftp://bot:hunter22@slack.com/api", wantErr: `providers.slack.base_url must not carry credentials (user:password@)`},
		{name: "CredentialsNoHost", raw: "https://bot:hunter22@/api", wantErr: `providers.slack.base_url must not carry credentials (user:password@)`},
		{name: "CredentialsWithoutHost", raw: "https://bot:hunter22", wantErr: `providers.slack.base_url is not a valid URL`},
		{name: "CredentialsWithoutSlashes", raw: "bot:hunter22@slack.com/api", wantErr: `providers.slack.base_url must be an http or https URL`},
		{name: "TokenInQuery", raw: "https://slack.com/api?token=hunter22", wantErr: `providers.slack.base_url must not have a query or fragment`},
		{name: "TokenInQueryUnparsable", raw: "https://slack.com/a%zz?token=hunter22", wantErr: `providers.slack.base_url is not a valid URL`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			u, err := httpsource.CheckBaseURL("slack", tt.raw)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), "hunter22")
				require.Nil(t, u)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.raw, u.String())
		})
	}
}

func TestNewClient(t *testing.T) {
	t.Parallel()

	t.Run("OwnTransportWithoutTimeout", func(t *testing.T) {
		t.Parallel()

		a, b := httpsource.NewClient(), httpsource.NewClient()
		require.Zero(t, a.Timeout)
		ta, ok := a.Transport.(interface{ Unwrap() http.RoundTripper }).Unwrap().(*http.Transport)
		require.True(t, ok)
		require.NotSame(t, http.DefaultTransport, a.Transport)
		require.NotSame(t, ta, b.Transport)
		require.NotNil(t, ta.Proxy)
		require.Equal(t, 256, ta.MaxIdleConnsPerHost)
	})

	t.Run("Calls", func(t *testing.T) {
		t.Parallel()

		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "ok")
		}))
		t.Cleanup(server.Close)
		client := httpsource.NewClient()
		t.Cleanup(client.CloseIdleConnections)

		resp, err := client.Get(server.URL)
		require.NoError(t, err)
		defer httpsource.CloseBody(resp.Body, 1<<10)
		body, err := httpsource.ReadBody(resp.Body, 1<<10)
		require.NoError(t, err)
		require.Equal(t, "ok", string(body))
	})

	// A provider's answer is read within bounds, its headers too.
	t.Run("BoundsHeaders", func(t *testing.T) {
		t.Parallel()

		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Filler", strings.Repeat("x", 2<<20))
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(server.Close)
		client := httpsource.NewClient()
		t.Cleanup(client.CloseIdleConnections)

		resp, err := client.Get(server.URL)
		if err == nil {
			resp.Body.Close()
		}
		require.ErrorContains(t, err, "server response headers exceeded")
	})
}

func TestKeepingMethod(t *testing.T) {
	t.Parallel()

	// The server redirects /from with the status in the query to /to,
	// which answers with the method and body it got.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/from" {
			status, _ := strconv.Atoi(r.URL.Query().Get("status"))
			http.Redirect(w, r, "/to", status)
			return
		}
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+string(body))
	}))
	t.Cleanup(server.Close)

	for _, tt := range []struct {
		method     string
		status     int
		wantStatus int
		wantBody   string
	}{
		{http.MethodGet, http.StatusMovedPermanently, http.StatusOK, "GET "},
		{http.MethodPut, http.StatusTemporaryRedirect, http.StatusOK, "PUT {}"},
		{http.MethodPost, http.StatusPermanentRedirect, http.StatusOK, "POST {}"},
		// Go would follow these with a GET without the body.
		{http.MethodPut, http.StatusMovedPermanently, http.StatusMovedPermanently, ""},
		{http.MethodPost, http.StatusFound, http.StatusFound, ""},
		{http.MethodPatch, http.StatusSeeOther, http.StatusSeeOther, ""},
	} {
		for name, client := range map[string]*http.Client{
			"NewClient":     httpsource.NewClient(),
			"KeepingMethod": httpsource.KeepingMethod(server.Client()),
		} {
			req, err := http.NewRequest(tt.method, server.URL+"/from?status="+strconv.Itoa(tt.status), strings.NewReader("{}"))
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			body, err := httpsource.ReadBody(resp.Body, 1<<10)
			require.NoError(t, err)
			httpsource.CloseBody(resp.Body, 1<<10)
			require.Equal(t, tt.wantStatus, resp.StatusCode, "%s %s %d", name, tt.method, tt.status)
			if tt.wantBody != "" {
				require.Equal(t, tt.wantBody, string(body), "%s %s %d", name, tt.method, tt.status)
			}
			client.CloseIdleConnections()
		}
	}

	t.Run("KeepsTheClientsOwnCheck", func(t *testing.T) {
		t.Parallel()
		base := *server.Client()
		base.CheckRedirect = func(*http.Request, []*http.Request) error { return errors.New("no redirects here") }
		_, err := httpsource.KeepingMethod(&base).Get(server.URL + "/from?status=302")
		require.ErrorContains(t, err, "no redirects here")
	})
}

func TestReadBody(t *testing.T) {
	t.Parallel()

	errBroken := errors.New("connection reset")
	for _, tt := range []struct {
		name     string
		body     io.Reader
		wantBody string
		wantErr  error
	}{
		{name: "Empty", body: strings.NewReader(""), wantBody: ""},
		{name: "UnderLimit", body: strings.NewReader("abc"), wantBody: "abc"},
		{name: "AtLimit", body: strings.NewReader("abcde"), wantBody: "abcde"},
		{name: "OneOverLimit", body: strings.NewReader("abcdef"), wantBody: "abcdef", wantErr: httpsource.ErrTooLarge},
		{name: "FarOverLimit", body: strings.NewReader(strings.Repeat("x", 100)), wantBody: "xxxxxx", wantErr: httpsource.ErrTooLarge},
		{name: "ReadError", body: io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(errBroken)), wantBody: "ab", wantErr: errBroken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			body, err := httpsource.ReadBody(tt.body, 5)
			require.Equal(t, tt.wantBody, string(body))
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

// trackedBody records what CloseBody does to a body.
type trackedBody struct {
	io.Reader
	closed bool
}

func (b *trackedBody) Close() error {
	b.closed = true
	return nil
}

func TestCloseBody(t *testing.T) {
	t.Parallel()

	t.Run("DrainsUpToLimitAndCloses", func(t *testing.T) {
		t.Parallel()

		rest := strings.NewReader(strings.Repeat("x", 10))
		body := &trackedBody{Reader: rest}
		httpsource.CloseBody(body, 4)
		require.True(t, body.closed)
		require.Equal(t, 6, rest.Len())
	})

	t.Run("ConnectionIsReused", func(t *testing.T) {
		t.Parallel()

		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("x", 100))
		}))
		t.Cleanup(server.Close)
		client := httpsource.NewClient()
		t.Cleanup(client.CloseIdleConnections)

		var reused []bool
		for range 2 {
			trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = append(reused, info.Reused) }}
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet, server.URL, nil)
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			// Reading only part of the body leaves the rest to CloseBody.
			_, err = httpsource.ReadBody(resp.Body, 10)
			require.ErrorIs(t, err, httpsource.ErrTooLarge)
			httpsource.CloseBody(resp.Body, 1<<10)
		}
		require.Equal(t, []bool{false, true}, reused)
	})
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()

	const (
		def     = 30 * time.Second
		ceiling = time.Hour
	)
	for _, tt := range []struct {
		name   string
		header []string
		def    time.Duration
		want   time.Duration
	}{
		{name: "Absent", def: def, want: def},
		{name: "AbsentWithoutDefault", want: 0},
		{name: "Seconds", header: []string{"5"}, def: def, want: 5 * time.Second},
		{name: "SecondsWithoutDefault", header: []string{"5"}, want: 5 * time.Second},
		{name: "Spaces", header: []string{" 7 "}, def: def, want: 7 * time.Second},
		{name: "Zero", header: []string{"0"}, def: def, want: def},
		{name: "Negative", header: []string{"-3"}, def: def, want: def},
		{name: "NotANumber", header: []string{"soon"}, def: def, want: def},
		{name: "HTTPDate", header: []string{"Wed, 21 Oct 2015 07:28:00 GMT"}, def: def, want: def},
		{name: "AtCap", header: []string{"3600"}, def: def, want: ceiling},
		{name: "OverCap", header: []string{"86400"}, def: def, want: ceiling},
		{name: "Overflow", header: []string{"99999999999999999999"}, def: def, want: def},
		{name: "FirstValueCounts", header: []string{"2", "9"}, def: def, want: 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			h := http.Header{}
			for _, v := range tt.header {
				h.Add("Retry-After", v)
			}
			require.Equal(t, tt.want, httpsource.RetryAfter(h, tt.def, ceiling))
		})
	}
}

func TestTransportError(t *testing.T) {
	t.Parallel()

	// requireClassified checks err's classification and that errors.Is still
	// finds cause.
	requireClassified := func(t *testing.T, err error, code, message string, cause error) {
		t.Helper()
		var e *executors.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, &executors.Error{Code: code, Message: message, Retryable: true, Cause: e.Cause}, e)
		require.Equal(t, e.Error(), err.Error())
		require.ErrorIs(t, err, cause)
	}

	t.Run("Canceled", func(t *testing.T) {
		t.Parallel()

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		cause := errors.New("Get: context canceled")
		err := httpsource.TransportError(ctx, "Slack", cause)
		requireClassified(t, err, "canceled", "the call to Slack was canceled before it answered", context.Canceled)
	})

	t.Run("DeadlineExceeded", func(t *testing.T) {
		t.Parallel()

		ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		err := httpsource.TransportError(ctx, "Linear", errors.New("Post: context deadline exceeded"))
		requireClassified(t, err, "timeout", "Linear did not answer before the deadline", context.DeadlineExceeded)
	})

	t.Run("NetworkTimeout", func(t *testing.T) {
		t.Parallel()

		release := make(chan struct{})
		server := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
		t.Cleanup(server.Close)
		t.Cleanup(func() { close(release) })
		client := httpsource.NewClient()
		client.Timeout = 50 * time.Millisecond
		t.Cleanup(client.CloseIdleConnections)

		_, cause := client.Get(server.URL)
		require.Error(t, cause)
		err := httpsource.TransportError(t.Context(), "Sentry", cause)
		requireClassified(t, err, "timeout", "calling Sentry timed out: "+cause.Error(), cause)
	})

	t.Run("NetworkError", func(t *testing.T) {
		t.Parallel()

		server := httptest.NewServer(http.NotFoundHandler())
		server.Close()

		_, cause := httpsource.NewClient().Get(server.URL)
		require.Error(t, cause)
		err := httpsource.TransportError(t.Context(), "Sentry", cause)
		requireClassified(t, err, "network_error", "calling Sentry failed: "+cause.Error(), cause)
	})
}

func TestUnknownAction(t *testing.T) {
	t.Parallel()

	err := httpsource.UnknownAction("linear", "delete_everything")

	var e *executors.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, &executors.Error{
		Code:    "unknown_action",
		Message: `the linear source has no action "delete_everything"`,
		Cause:   executors.ErrUnknownAction,
	}, e)
	require.ErrorIs(t, err, executors.ErrUnknownAction)
}

func TestScrub(t *testing.T) {
	t.Parallel()

	const token = "tok/en+1"

	t.Run("Nil", func(t *testing.T) {
		t.Parallel()

		require.NoError(t, httpsource.Scrub(nil, token))
	})

	t.Run("ClassifiedIsScrubbedInPlace", func(t *testing.T) {
		t.Parallel()

		classified := &executors.Error{Code: "bad_" + token, Message: "calling X failed: " + token + " and " + token, Retryable: true, Cause: context.Canceled}
		err := fmt.Errorf("calling X: %w", classified)

		got := httpsource.Scrub(err, token)
		require.Same(t, err, got)
		require.Equal(t, &executors.Error{Code: "bad_[REDACTED]", Message: "calling X failed: [REDACTED] and [REDACTED]", Retryable: true, Cause: context.Canceled}, classified)
		require.ErrorIs(t, got, context.Canceled)
	})

	for _, tt := range []struct {
		name    string
		err     error
		secrets []string
		want    string
		same    bool
	}{
		{name: "PlainWithSecret", err: errors.New("dial " + token), secrets: []string{token}, want: "dial [REDACTED]"},
		{name: "PlainWithoutSecret", err: errors.New("dial refused"), secrets: []string{token}, want: "dial refused", same: true},
		{name: "NoSecret", err: errors.New("dial " + token), want: "dial " + token, same: true},
		{name: "EmptySecret", err: errors.New("dial"), secrets: []string{""}, want: "dial", same: true},
		{name: "EmptySecretsSkipped", err: errors.New("dial " + token), secrets: []string{"", token, ""}, want: "dial [REDACTED]"},
		{name: "EveryForm", err: errors.New("GET /issues/tok%2Fen+1/?q=tok%2Fen%2B1: " + token), secrets: []string{token, "tok%2Fen+1", "tok%2Fen%2B1"}, want: "GET /issues/[REDACTED]/?q=[REDACTED]: [REDACTED]"},
		{name: "OnlyNamedForms", err: errors.New("GET /issues/tok%2Fen+1/"), secrets: []string{token}, want: "GET /issues/tok%2Fen+1/", same: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got := httpsource.Scrub(tt.err, tt.secrets...)
			require.EqualError(t, got, tt.want)
			if tt.same {
				require.Same(t, tt.err, got)
			}
		})
	}
}
