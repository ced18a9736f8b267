package slack_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/providertest"
	"github.com/outboxd/outboxd/executors/slack"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testToken only uses characters Slack allows in error codes, so a test can
// have the server echo it back as one and check it is still redacted.
const testToken = "xoxb_1234_secret_test_token"

const (
	okAnswer = `{"ok":true,"channel":"C123","ts":"1503435956.000247","message":{` +
		`"text":"Here's a message for you","username":"ecto1","bot_id":"B123",` +
		`"type":"message","subtype":"bot_message","ts":"1503435956.000247"}}`
	channelNotFoundAnswer = `{"ok":false,"error":"channel_not_found"}`
)

type testBundle struct {
	source executors.Source
	server *providertest.Server
}

func (b *testBundle) recorded() []providertest.Request { return b.server.Requests() }

// setup starts a loopback Slack that records each request and answers with
// handler, and a Source pointed at it.
func setup(t *testing.T, handler http.HandlerFunc) *testBundle {
	t.Helper()

	bundle := &testBundle{server: providertest.New(t, handler)}
	source, err := slack.New(&slack.Config{BaseURL: bundle.server.URL(), HTTPClient: bundle.server.Client()})
	require.NoError(t, err)
	bundle.source = source
	return bundle
}

// answer returns a handler replying with status, body and extra headers.
func answer(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func execContext() executors.ExecContext {
	return executors.ExecContext{
		Token:          testToken,
		OrganizationID: "org_1",
		SessionID:      "sess_1",
		IdempotencyKey: "inv_0123",
	}
}

const sendParams = `{"channel":"C123","text":"Here's a message for you"}`

// requireExecError asserts err is a classified failure free of the token and
// returns its classification.
func requireExecError(t *testing.T, err error) *executors.Error {
	t.Helper()
	require.Error(t, err)
	require.NotContains(t, err.Error(), testToken)

	var execErr *executors.Error
	require.ErrorAs(t, err, &execErr)
	require.NotContains(t, execErr.Code, testToken)
	require.NotContains(t, execErr.Message, testToken)
	return execErr
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("NilConfigUsesDefaults", func(t *testing.T) {
		t.Parallel()

		source, err := slack.New(nil)
		require.NoError(t, err)
		require.Equal(t, slack.SourceID, source.ID())
	})

	t.Run("WithDefaults", func(t *testing.T) {
		t.Parallel()

		cfg := (&slack.Config{}).WithDefaults()
		require.Equal(t, slack.DefaultBaseURL, cfg.BaseURL)
		require.NotNil(t, cfg.HTTPClient)
		require.Zero(t, cfg.HTTPClient.Timeout, "deadlines come from ctx")

		client := &http.Client{}
		cfg = (&slack.Config{BaseURL: "http://127.0.0.1:1/api/", HTTPClient: client}).WithDefaults()
		require.Equal(t, "http://127.0.0.1:1/api", cfg.BaseURL)
		require.Same(t, client, cfg.HTTPClient)
	})

	t.Run("InvalidBaseURL", func(t *testing.T) {
		t.Parallel()

		for _, baseURL := range []string{
			"slack.com/api",
			"ftp://slack.com/api",
			"https://",
			"https://slack.com/api?x=1",
			// The method would land in the query or the fragment.
			"https://slack.com/api?",
			"https://slack.com/api#",
			"https://bot:hunter22@slack.com/api",
			"://bad",
		} {
			_, err := slack.New(&slack.Config{BaseURL: baseURL})
			require.Error(t, err, baseURL)
			require.NotContains(t, err.Error(), "hunter22")
		}
	})
}

func TestSource_ListActions(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T) executors.Definition {
		t.Helper()
		source, err := slack.New(nil)
		require.NoError(t, err)
		defs, err := source.ListActions(context.Background(), executors.ExecContext{})
		require.NoError(t, err)
		require.Len(t, defs, 1)
		return defs[0]
	}

	t.Run("Definition", func(t *testing.T) {
		t.Parallel()
		def := setup(t)

		require.Equal(t, slack.ActionSendMessage, def.ID)
		require.Equal(t, executors.TierR2, def.Tier)
		require.Contains(t, def.Description, "thread_ts")
		require.True(t, json.Valid(def.Params))
	})

	t.Run("ParamsIsACopy", func(t *testing.T) {
		t.Parallel()
		def := setup(t)

		def.Params[0] = 'X'
		require.True(t, json.Valid(setup(t).Params))
	})

	t.Run("SchemaAcceptsGoodParams", func(t *testing.T) {
		t.Parallel()
		def := setup(t)
		validator := executors.NewValidator()

		for _, params := range []string{
			sendParams,
			`{"channel":"#general","text":"hi","thread_ts":"1503435956.000247"}`,
			`{"channel":"C1","text":"` + strings.Repeat("a", 40000) + `"}`,
		} {
			fieldErrs, err := validator.Validate(def.Params, json.RawMessage(params))
			require.NoError(t, err)
			require.Empty(t, fieldErrs, params)
		}
	})

	t.Run("SchemaRejectsBadParams", func(t *testing.T) {
		t.Parallel()
		def := setup(t)
		validator := executors.NewValidator()

		for params, wantFields := range map[string][]string{
			`{"text":"hi"}`:              {"channel"},
			`{"channel":"C1"}`:           {"text"},
			`{}`:                         {"channel", "text"},
			`{"channel":"","text":""}`:   {"channel", "text"},
			`{"channel":42,"text":"hi"}`: {"channel"},
			`{"channel":"C1","text":"hi","thread_ts":1}`:                   {"thread_ts"},
			`{"channel":"C1","text":"hi","as_user":true}`:                  {"as_user"},
			`{"channel":"C1","text":"` + strings.Repeat("a", 40001) + `"}`: {"text"},
			`["C1","hi"]`: {""},
		} {
			fieldErrs, err := validator.Validate(def.Params, json.RawMessage(params))
			require.NoError(t, err)
			fields := make([]string, len(fieldErrs))
			for i, fe := range fieldErrs {
				fields[i] = fe.Field
			}
			require.Equal(t, wantFields, fields, params)
		}
	})
}

func TestSource_Execute(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	t.Run("PostsMessage", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))

		res, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		require.NoError(t, err)
		require.JSONEq(t, okAnswer, string(res.Data))
		require.Equal(t, "1503435956.000247", res.ProviderRef)
		require.False(t, res.Conflict)

		reqs := bundle.recorded()
		require.Len(t, reqs, 1)
		req := reqs[0]
		require.Equal(t, http.MethodPost, req.Method)
		require.Equal(t, "/chat.postMessage", req.Path)
		require.Equal(t, "Bearer "+testToken, req.Header.Get("Authorization"))
		require.Equal(t, "application/json; charset=utf-8", req.Header.Get("Content-Type"))
		require.Equal(t, "inv_0123", req.Header.Get("X-Outboxd-Idempotency-Key"))
		require.JSONEq(t, `{"channel":"C123","text":"Here's a message for you",`+
			`"metadata":{"event_type":"outboxd_action","event_payload":{"idempotency_key":"inv_0123"}}}`, string(req.Body))
	})

	t.Run("PassesThreadTS", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))

		params := `{"channel":"C123","text":"a reply","thread_ts":"1503435956.000247"}`
		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), execContext())
		require.NoError(t, err)

		reqs := bundle.recorded()
		require.Len(t, reqs, 1)
		var body map[string]any
		require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
		require.Equal(t, "1503435956.000247", body["thread_ts"])
	})

	t.Run("OmitsUnsetOptionalFields", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))

		ec := execContext()
		ec.IdempotencyKey = ""
		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), ec)
		require.NoError(t, err)

		reqs := bundle.recorded()
		require.Len(t, reqs, 1)
		require.NotContains(t, reqs[0].Header, "X-Outboxd-Idempotency-Key")
		require.NotContains(t, string(reqs[0].Body), "thread_ts")
		require.NotContains(t, string(reqs[0].Body), "metadata", "no key, no metadata")
	})

	t.Run("DefaultHTTPClientAndBaseURLWithPath", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))

		cfg := (&slack.Config{BaseURL: bundle.server.URL() + "/api/"}).WithDefaults()
		t.Cleanup(cfg.HTTPClient.CloseIdleConnections)
		source, err := slack.New(cfg)
		require.NoError(t, err)

		res, err := source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		require.NoError(t, err)
		require.Equal(t, "1503435956.000247", res.ProviderRef)

		reqs := bundle.recorded()
		require.Len(t, reqs, 1)
		require.Equal(t, "/api/chat.postMessage", reqs[0].Path)
	})

	t.Run("RateLimitedHTTP", func(t *testing.T) {
		t.Parallel()

		for retryAfter, want := range map[string]time.Duration{
			"7":         7 * time.Second,
			"":          30 * time.Second,
			"soon":      30 * time.Second,
			"0":         30 * time.Second,
			"-5":        30 * time.Second,
			"999999999": time.Hour,
		} {
			bundle := setup(t, answer(http.StatusTooManyRequests, `{"ok":false,"error":"ratelimited"}`, "Retry-After", retryAfter))

			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "ratelimited", execErr.Code)
			require.True(t, execErr.Retryable)
			require.Equal(t, want, execErr.RetryAfter, "Retry-After %q", retryAfter)
			require.True(t, execErr.NotDone, "Slack did not process a rate-limited post")
		}
	})

	t.Run("HTTPServerError", func(t *testing.T) {
		t.Parallel()

		for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable} {
			bundle := setup(t, answer(status, `<html>oops</html>`))

			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "http_"+strconv.Itoa(status), execErr.Code)
			require.True(t, execErr.Retryable)
			require.Zero(t, execErr.RetryAfter)
			require.False(t, execErr.NotDone, "a server error may come after the post landed")
		}
	})

	t.Run("HTTPServerErrorWithRetryAfter", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusServiceUnavailable, ``, "Retry-After", "12"))

		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "http_503", execErr.Code)
		require.True(t, execErr.Retryable)
		require.Equal(t, 12*time.Second, execErr.RetryAfter)
	})

	t.Run("HTTPClientError", func(t *testing.T) {
		t.Parallel()

		for _, status := range []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusGone} {
			bundle := setup(t, answer(status, `{"ok":false,"error":"invalid_arguments"}`))

			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "http_"+strconv.Itoa(status), execErr.Code)
			require.False(t, execErr.Retryable)
			require.Contains(t, execErr.Message, "invalid_arguments")
		}
	})

	t.Run("SlackErrorNotRetryable", func(t *testing.T) {
		t.Parallel()

		for _, code := range []string{
			"invalid_auth", "not_authed", "channel_not_found", "not_in_channel", "is_archived",
			"msg_too_long", "no_text", "token_revoked", "account_inactive", "missing_scope",
			"some_future_error",
		} {
			bundle := setup(t, answer(http.StatusOK, `{"ok":false,"error":"`+code+`"}`))

			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, code, execErr.Code)
			require.False(t, execErr.Retryable, code)
			require.Zero(t, execErr.RetryAfter, code)
			require.NotEmpty(t, execErr.Message, code)
		}
	})

	t.Run("ExpiredTokenIsUnauthorized", func(t *testing.T) {
		t.Parallel()

		// Unauthorized has the worker refresh the token and try once more.
		bundle := setup(t, answer(http.StatusOK, `{"ok":false,"error":"token_expired"}`))
		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, executors.CodeUnauthorized, execErr.Code)
		require.False(t, execErr.Retryable)
		require.Contains(t, execErr.Message, "token_expired")
	})

	t.Run("SlackErrorRetryable", func(t *testing.T) {
		t.Parallel()

		for _, code := range []string{"internal_error", "fatal_error", "service_unavailable", "request_timeout"} {
			bundle := setup(t, answer(http.StatusOK, `{"ok":false,"error":"`+code+`"}`))

			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, code, execErr.Code)
			require.True(t, execErr.Retryable, code)
		}
	})

	t.Run("SlackErrorRateLimited", func(t *testing.T) {
		t.Parallel()

		for retryAfter, want := range map[string]time.Duration{"5": 5 * time.Second, "": 30 * time.Second} {
			bundle := setup(t, answer(http.StatusOK, `{"ok":false,"error":"ratelimited"}`, "Retry-After", retryAfter))

			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "ratelimited", execErr.Code)
			require.True(t, execErr.Retryable)
			require.Equal(t, want, execErr.RetryAfter)
			require.True(t, execErr.NotDone, "Slack did not process a rate-limited post")
		}
	})

	t.Run("SlackErrorChannelNotFound", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, channelNotFoundAnswer))

		res, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "channel_not_found", execErr.Code)
		require.Contains(t, execErr.Message, "channel")
		require.Equal(t, executors.Result{}, res)
		require.Same(t, execErr, executors.Classify(err))
	})

	t.Run("SlackErrorMissingScopeNamesScope", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, `{"ok":false,"error":"missing_scope","needed":"chat:write","provided":"channels:read"}`))

		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "missing_scope", execErr.Code)
		require.Contains(t, execErr.Message, "chat:write")
	})

	t.Run("SlackErrorWithoutUsableCode", func(t *testing.T) {
		t.Parallel()

		for _, body := range []string{
			`{"ok":false}`,
			`{"ok":false,"error":"Something Odd <script>"}`,
			`{"ok":false,"error":"invalid_auth for xoxb-` + testToken + `"}`,
		} {
			bundle := setup(t, answer(http.StatusOK, body))

			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "unknown_error", execErr.Code, body)
			require.False(t, execErr.Retryable, body)
		}
	})

	t.Run("TokenEchoedBackIsRedacted", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, `{"ok":false,"error":"`+testToken+`"}`))

		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		execErr := requireExecError(t, err)
		require.Contains(t, err.Error(), "[REDACTED]")
		require.False(t, execErr.Retryable)
	})

	t.Run("InvalidResponse", func(t *testing.T) {
		t.Parallel()

		for _, body := range []string{
			`<html><body>Service maintenance</body></html>`,
			``,
			`[]`,
			`{}`,
			`{"ok":"true"}`,
			`{"ok":true,"ts":"1503435956.000247"`,
			`{"ok":true,"ts":"1","pad":"` + strings.Repeat("a", 1<<20) + `"}`,
		} {
			bundle := setup(t, answer(http.StatusOK, body))

			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "invalid_response", execErr.Code)
			require.True(t, execErr.Retryable)
		}
	})

	t.Run("ConnectionDropped", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		})

		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "network_error", execErr.Code)
		require.True(t, execErr.Retryable)
	})

	t.Run("ConnectionRefused", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))
		bundle.server.Close()

		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "network_error", execErr.Code)
		require.True(t, execErr.Retryable)
	})

	t.Run("DeadlineExceeded", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})

		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()

		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "timeout", execErr.Code)
		require.True(t, execErr.Retryable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("CanceledByCaller", func(t *testing.T) {
		t.Parallel()
		arrived := make(chan struct{})
		bundle := setup(t, func(_ http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-r.Context().Done()
		})

		ctx, cancel := context.WithCancel(ctx)
		defer cancel()

		errc := make(chan error, 1)
		go func() {
			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
			errc <- err
		}()
		<-arrived
		cancel()
		err := <-errc

		require.ErrorIs(t, err, context.Canceled)
		require.NotContains(t, err.Error(), testToken)
		require.True(t, executors.Classify(err).Retryable)
	})

	t.Run("UnknownAction", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))

		_, err := bundle.source.Execute(ctx, "delete_channel", json.RawMessage(sendParams), execContext())
		require.ErrorIs(t, err, executors.ErrUnknownAction)
		execErr := requireExecError(t, err)
		require.Equal(t, "unknown_action", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Same(t, execErr, executors.Classify(err))
		require.Empty(t, bundle.recorded())
	})

	t.Run("InvalidParams", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))

		for _, params := range []string{
			``,
			`null`,
			`[]`,
			`{"channel":"C1"}`,
			`{"text":"hi"}`,
			`{"channel":1,"text":"hi"}`,
			`{"channel":"C1","text":"hi","as_user":true}`,
			`{"channel":"C1","text":"hi"} {}`,
		} {
			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "invalid_params", execErr.Code, params)
			require.False(t, execErr.Retryable, params)
		}
		require.Empty(t, bundle.recorded())
	})

	t.Run("MissingToken", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))

		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), executors.ExecContext{})
		execErr := requireExecError(t, err)
		require.Equal(t, "not_authed", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Empty(t, bundle.recorded())
	})

	t.Run("ConcurrentUse", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, okAnswer))

		const calls = 20
		errs := make(chan error, calls)
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), execContext())
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, bundle.recorded(), calls)
	})
}
