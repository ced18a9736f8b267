package sentry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// maxResponseBytes bounds how much of Sentry's answer is read. A full
	// event with its stack trace and breadcrumbs is the largest answer and
	// rarely comes near it.
	maxResponseBytes = 1 << 20

	// defaultRetryAfter is used when Sentry rate-limits without a usable
	// Retry-After header.
	defaultRetryAfter = 30 * time.Second

	// maxRetryAfter caps a Retry-After header, so a bogus value cannot park
	// an invocation for days.
	maxRetryAfter = time.Hour
)

// request is one call to Sentry's REST API.
type request struct {
	method string
	// segments are the path below the base URL, unescaped; each is escaped
	// on its own and the path gets Sentry's trailing slash.
	segments []string
	query    url.Values
	// body is sent as JSON when non-nil; its presence also marks the call
	// as a write, which carries the idempotency key.
	body []byte
	// subject names what the call is about, e.g. `issue "123"`, for error
	// messages.
	subject string
	// allowEmpty accepts a 2xx answer with no body, which Sentry may send
	// for a write.
	allowEmpty bool
}

// answer is a successful response: its JSON body and its headers.
type answer struct {
	body   json.RawMessage
	header http.Header
}

// do sends r and classifies the outcome. On success the body is valid JSON
// of at most maxResponseBytes.
func (s *client) do(ctx context.Context, ec executors.ExecContext, r *request) (*answer, error) {
	if ec.Token == "" {
		return nil, &executors.Error{
			Code:    "not_authed",
			Message: "no Sentry token is available; connect Sentry first",
		}
	}

	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, s.endpoint(r), body)
	if err != nil {
		return nil, fmt.Errorf("sentry: building request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+ec.Token)
	req.Header.Set("Accept", "application/json")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
		if ec.IdempotencyKey != "" {
			// Sentry ignores the key.
			req.Header.Set(httpsource.IdempotencyKeyHeader, ec.IdempotencyKey)
		}
	}

	resp, err := s.http.Do(req)
	if err != nil {
		return nil, httpsource.TransportError(ctx, "Sentry", err)
	}
	defer httpsource.CloseBody(resp.Body, maxResponseBytes)

	raw, readErr := httpsource.ReadBody(resp.Body, maxResponseBytes)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(resp, raw, r.subject, ec.Token)
	}
	if errors.Is(readErr, httpsource.ErrTooLarge) {
		return nil, &executors.Error{
			Code:    "response_too_large",
			Message: fmt.Sprintf("Sentry's answer about %s is larger than %d bytes", r.subject, maxResponseBytes),
		}
	}
	if readErr != nil {
		return nil, httpsource.TransportError(ctx, "Sentry", readErr)
	}
	if r.allowEmpty && len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		return nil, &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("Sentry answered HTTP %d with a body that is not JSON", resp.StatusCode),
			Retryable: true,
		}
	}
	return &answer{body: json.RawMessage(raw), header: resp.Header}, nil
}

// endpoint is the URL of r: the base URL, each segment escaped on its own
// so a "/" or "?" in an id cannot change the endpoint, a trailing slash as
// Sentry's routes expect, and the query.
func (s *client) endpoint(r *request) string {
	var b strings.Builder
	b.WriteString(s.baseURL)
	for _, seg := range r.segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(seg))
	}
	b.WriteByte('/')
	if len(r.query) > 0 {
		b.WriteByte('?')
		b.WriteString(r.query.Encode())
	}
	return b.String()
}

// statuses words Sentry's refusals.
var statuses = httpsource.Statuses{
	Provider: "Sentry",
	Hints: map[int]httpsource.Hint{
		http.StatusUnauthorized: {Code: executors.CodeUnauthorized, Message: "Sentry rejected the token (HTTP 401); reconnect Sentry"},
		http.StatusForbidden:    {Code: "forbidden", Message: "the Sentry token lacks access to {subject} (HTTP 403); check the token's scopes and team membership"},
		http.StatusNotFound:     {Code: "not_found", Message: "Sentry found no {subject}, or the token cannot see it (HTTP 404); check the ids and slugs"},
	},
	RateLimitWait: defaultRetryAfter,
	MaxWait:       maxRetryAfter,
}

// statusError classifies a non-2xx answer, quoting what Sentry said
// without the token.
func statusError(resp *http.Response, raw []byte, subject, token string) *executors.Error {
	return statuses.Error(resp.StatusCode, resp.Header, subject, httpsource.Detail(errorDetail(raw), token))
}

// errorDetail extracts the explanation from a Sentry error body.
// Sentry answers {"detail": "..."}, sometimes {"detail": {"message": ...}},
// and for invalid fields {"field": ["message", ...]}. Anything else yields
// "".
func errorDetail(raw []byte) string {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return ""
	}
	if d, ok := body["detail"]; ok {
		var s string
		if json.Unmarshal(d, &s) == nil {
			return s
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(d, &obj) == nil {
			return obj.Message
		}
		return ""
	}

	var parts []string
	for _, field := range slices.Sorted(maps.Keys(body)) {
		var msgs []string
		if json.Unmarshal(body[field], &msgs) != nil || len(msgs) == 0 {
			continue
		}
		parts = append(parts, field+": "+strings.Join(msgs, " "))
	}
	return strings.Join(parts, "; ")
}

// isJSONArray reports whether raw, already known to be valid JSON, is an
// array.
func isJSONArray(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '['
}
