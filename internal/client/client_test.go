package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/client"
)

// server answers with h and records the last request and its body.
func server(t *testing.T, h http.HandlerFunc) (*client.Client, *http.Request, *[]byte) {
	t.Helper()
	var last http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		last = *r.Clone(context.Background())
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return client.New(srv.URL+"/", "tok"), &last, &body
}

func TestError_DecodesTheAPIErrorAndRetryAfter(t *testing.T) {
	c, req, _ := server(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"code":"rate_limited","message":"slow down","details":{"retry_after_seconds":7}}}`)
	})
	_, err := c.Invocation(context.Background(), "abc")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusTooManyRequests, apiErr.Status)
	require.Equal(t, "rate_limited", apiErr.Code)
	require.Equal(t, "slow down", apiErr.Message)
	require.Equal(t, map[string]any{"retry_after_seconds": float64(7)}, apiErr.Details)
	require.Equal(t, 7*time.Second, apiErr.RetryAfter)
	require.Equal(t, "HTTP 429: slow down", apiErr.Error())
	require.Equal(t, "/v1/invocations/abc", req.URL.Path)
	require.Equal(t, "Bearer tok", req.Header.Get("Authorization"))
}

func TestError_WithoutAnAPIBodyShowsTheBody(t *testing.T) {
	c, _, _ := server(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream broke", http.StatusBadGateway)
	})
	err := c.PutActionModes(context.Background(), map[string]string{"slack:send_message": "allow"})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Empty(t, apiErr.Code)
	require.Zero(t, apiErr.RetryAfter)
	require.Equal(t, "HTTP 502: upstream broke", err.Error())
}

func TestDo_TransportErrorIsNotAnAPIError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	_, err := client.New(srv.URL, "tok").Invocation(context.Background(), "x")
	require.ErrorContains(t, err, "calling outboxd: ")
	var apiErr *client.Error
	require.False(t, errors.As(err, &apiErr))
}

func TestInvoke_SendsTheKeyAndKeepsTheInvocationOfARefusal(t *testing.T) {
	c, req, body := server(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"invocation":{"id":"i-1","status":"denied","denied_reason":"policy"},"error":{"code":"action_denied","message":"action denied (policy)"}}`)
	})
	res, err := c.Session("s/1").Invoke(context.Background(), client.InvokeRequest{Integration: "slack", Action: "send_message", Params: map[string]any{"a": 1}}, "key-1")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "action_denied", apiErr.Code)
	require.NotNil(t, res)
	require.Equal(t, http.StatusForbidden, res.Status)
	require.Equal(t, "i-1", res.Invocation.ID)
	require.Equal(t, "policy", *res.Invocation.DeniedReason)
	require.Equal(t, "/v1/sessions/s%2F1/actions/invoke", req.URL.EscapedPath())
	require.Equal(t, "key-1", req.Header.Get("Idempotency-Key"))
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.JSONEq(t, `{"integration":"slack","action":"send_message","params":{"a":1}}`, string(*body))

	// An error without an invocation gives no result.
	c, _, _ = server(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"code":"invalid_params","message":"channel is required"}}`)
	})
	res, err = c.Session("s").Invoke(context.Background(), client.InvokeRequest{Integration: "slack", Action: "send_message"}, "")
	require.Nil(t, res)
	require.EqualError(t, err, "HTTP 400: channel is required")
}

// A 202 names the invocation and, beside it, the invocation's status as
// text; the result's Status stays the HTTP status.
func TestInvoke_PendingAnswer(t *testing.T) {
	c, _, _ := server(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"invocation":{"id":"i-2","status":"pending"},"invocation_id":"i-2","status":"pending","message":"Action requires approval"}`)
	})
	res, err := c.Session("s").Invoke(context.Background(), client.InvokeRequest{Integration: "slack", Action: "send_message"}, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, res.Status)
	require.Equal(t, "i-2", res.Invocation.ID)
	require.Equal(t, "pending", res.Invocation.Status)
}

func TestEnqueue_CreatedAndBatch(t *testing.T) {
	c, req, body := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/envelopes/batch" {
			_, _ = io.WriteString(w, `{"envelopes":[{"action_id":"a-1","created":true,"invocation_status":"approved"},{"error":{"code":"invalid_envelope","message":"bad"}}]}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"action_id":"a-1","external_id":"e-1","invocation_status":"approved"}`)
	})
	e := &client.Envelope{ExternalID: "e-1", Tool: client.EnvelopeTool{Source: "slack", Action: "send_message"}, Args: map[string]string{"channel": "C1"}}
	view, err := c.Enqueue(context.Background(), e)
	require.NoError(t, err)
	require.True(t, view.Created)
	require.Equal(t, "a-1", view.ActionID)
	require.JSONEq(t, `{"external_id":"e-1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1"}}`, string(*body))

	items, err := c.EnqueueBatch(context.Background(), []*client.Envelope{e, e})
	require.NoError(t, err)
	require.Equal(t, "/v1/envelopes/batch", req.URL.Path)
	require.Len(t, items, 2)
	require.True(t, items[0].Created)
	require.Nil(t, items[0].Error)
	require.Equal(t, "invalid_envelope", items[1].Error.Code)
}

func TestSession_AvailableKeepsTheRawAnswer(t *testing.T) {
	raw := `{"actions":[{"source":"slack","action":"send_message","mode":"require_approval","risk_tier":"R2","delivery":"sync","extra":1}]}`
	c, _, _ := server(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, raw) })
	cat, err := c.Session("s").Available(context.Background())
	require.NoError(t, err)
	require.Equal(t, raw, string(cat.Raw))
	require.Equal(t, []client.Action{{Source: "slack", Action: "send_message", Mode: "require_approval", RiskTier: "R2", Delivery: "sync"}}, cat.Actions)
}

// eventServer writes text as an event stream and records Last-Event-ID.
func eventServer(t *testing.T, text string) (*client.Client, *string) {
	t.Helper()
	var lastID string
	c, _, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		lastID = r.Header.Get("Last-Event-ID")
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, text)
	})
	return c, &lastID
}

func TestStream_ParsesEvents(t *testing.T) {
	c, lastID := eventServer(t, ": connected\n\n"+
		"id: 1.5\nevent: action_completed\ndata: {\"invocation_id\":\"i-1\",\"status\":\"completed\"}\n\n"+
		": heartbeat\n\n"+
		"event: note\ndata: first\ndata:second\nretry: 10\n\n"+
		"id:2.0\ndata: {\"a\":\n\n")
	s, err := c.Session("s").Events(context.Background(), "")
	require.NoError(t, err)
	defer s.Close()
	require.Empty(t, *lastID, "no Last-Event-ID on a fresh stream")

	ev, err := s.Next()
	require.NoError(t, err)
	require.Equal(t, "1.5", ev.ID)
	require.Equal(t, "action_completed", ev.Event)
	var n client.Notice
	require.NoError(t, ev.Decode(&n))
	require.Equal(t, "i-1", n.InvocationID)
	require.Equal(t, "completed", n.Status)
	require.Equal(t, "1.5", s.LastID())

	ev, err = s.Next()
	require.NoError(t, err)
	require.Equal(t, client.Event{Event: "note", Data: []byte("first\nsecond")}, ev, "data lines join with newlines; a field's one leading space goes")
	require.Equal(t, "1.5", s.LastID(), "an event without an id keeps the last one")

	ev, err = s.Next()
	require.NoError(t, err)
	require.Equal(t, "2.0", ev.ID)
	require.Equal(t, `{"a":`, string(ev.Data))
	require.Error(t, ev.Decode(&n), "data that is not JSON fails Decode only")
	require.Equal(t, "2.0", s.LastID())

	_, err = s.Next()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the stream ended")
}

func TestStream_ResumesAfterLastEventID(t *testing.T) {
	c, lastID := eventServer(t, "id: 9.1\nevent: x\ndata: {}\n\n")
	s, err := c.Events(context.Background(), "/v1/events?types=action_completed", "8.0")
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "8.0", *lastID)
	require.Equal(t, "8.0", s.LastID(), "before any event, where it was opened")
	_, err = s.Next()
	require.NoError(t, err)
	s2, err := c.Events(context.Background(), "/v1/events", s.LastID())
	require.NoError(t, err)
	defer s2.Close()
	require.Equal(t, "9.1", *lastID)
}

func TestStream_RefusesOtherAnswers(t *testing.T) {
	c, _, _ := server(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	})
	_, err := c.Events(context.Background(), "/v1/events", "")
	var ctErr *client.ContentTypeError
	require.ErrorAs(t, err, &ctErr)
	require.Equal(t, "application/json", ctErr.ContentType)

	c, _, _ = server(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"code":"unauthorized","message":"bad token"}}`)
	})
	_, err = c.Session("s").Events(context.Background(), "")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.Status)
	require.Equal(t, "unauthorized", apiErr.Code)
}

func TestStream_LongEvent(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	payload, _ := json.Marshal(map[string]string{"v": big})
	c, _ := eventServer(t, "id: 1\ndata: "+string(payload)+"\n\n")
	s, err := c.Events(context.Background(), "/v1/events", "")
	require.NoError(t, err)
	defer s.Close()
	ev, err := s.Next()
	require.NoError(t, err)
	require.Len(t, ev.Data, len(payload))
}

func TestSession_CancelPostsToTheSessionsRoute(t *testing.T) {
	c, req, body := server(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"invocation":{"id":"i/3","status":"cancelled","integration":"slack","action":"send_message"}}`)
	})
	inv, err := c.Session("s/1").Cancel(context.Background(), "i/3")
	require.NoError(t, err)
	require.Equal(t, "cancelled", inv.Status)
	require.Equal(t, "i/3", inv.ID)
	require.Equal(t, http.MethodPost, req.Method)
	require.Equal(t, "/v1/sessions/s%2F1/actions/invocations/i%2F3/cancel", req.URL.EscapedPath())
	require.Empty(t, *body)

	// One that has started or ended is a conflict, with the API's code.
	c, _, _ = server(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"error":{"code":"conflict","message":"invocation is completed"}}`)
	})
	inv, err = c.Session("s").Cancel(context.Background(), "i-4")
	require.Nil(t, inv)
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusConflict, apiErr.Status)
	require.Equal(t, "conflict", apiErr.Code)
}
