package httpsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/outboxd/outboxd/executors"
)

// Request is one call to a provider's JSON REST API.
type Request struct {
	Method string
	// Segments are the path below the base URL, unescaped; each is escaped
	// on its own, so a "/" or "?" in a name or id cannot change the
	// endpoint.
	Segments []string
	Query    url.Values
	// Body is sent as JSON when non-nil; its presence also marks the call
	// as a write, which carries the idempotency key.
	Body []byte
	// Subject names what the call is about, e.g. `issue #12 of acme/web`,
	// for error messages.
	Subject string
	// AllowEmpty accepts a 2xx answer with no body, which some providers
	// send for a write, as the empty object {}.
	AllowEmpty bool
}

// Answer is a successful response: its JSON body and its headers.
type Answer struct {
	Body   json.RawMessage
	Header http.Header
}

// REST sends calls to one provider's JSON REST API, each with the token of
// its invocation. It holds configuration only, so one REST serves every
// call and is safe for concurrent use. What sets providers apart is
// configured here: their headers, their paths' trailing slash, how much of
// an answer is read, and how a refusal is classified (StatusError).
type REST struct {
	// Provider is the provider's display name, e.g. "Sentry".
	Provider string
	// Source is the source's id, e.g. "sentry", which prefixes the errors
	// that are bugs rather than answers.
	Source string
	// BaseURL is the root the escaped path segments are appended to,
	// checked with CheckBaseURL and without a trailing slash.
	BaseURL string
	// TrailingSlash ends every path with "/", as some providers' routes
	// expect.
	TrailingSlash bool
	// HTTP sends the requests.
	HTTP *http.Client
	// Header holds the provider's own request headers, such as an API
	// version. Accept defaults to application/json; Authorization,
	// Content-Type and IdempotencyKeyHeader are set by Do.
	Header map[string]string
	// MaxBytes bounds how much of an answer is read.
	MaxBytes int64
	// StatusError classifies a non-2xx answer to a call about subject. raw
	// is the start of its body, which may be cut short or not JSON; what it
	// quotes must not contain token (see Detail).
	StatusError func(resp *http.Response, raw []byte, subject, token string) *executors.Error
}

// Do sends r with ec's token and classifies the outcome: a missing token is
// not_authed without a call, a failure to get an answer is TransportError's,
// a non-2xx answer is StatusError's, and a 2xx answer longer than MaxBytes
// or not JSON is response_too_large or invalid_response. On success the
// body is valid JSON of at most MaxBytes.
func (c *REST) Do(ctx context.Context, ec executors.ExecContext, r *Request) (*Answer, error) {
	if ec.Token == "" {
		return nil, &executors.Error{
			Code:    "not_authed",
			Message: fmt.Sprintf("no %s token is available; connect %s first", c.Provider, c.Provider),
		}
	}

	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, c.URL(r), body)
	if err != nil {
		return nil, fmt.Errorf("%s: building request: %w", c.Source, err)
	}
	req.Header.Set("Authorization", "Bearer "+ec.Token)
	req.Header.Set("Accept", "application/json")
	for name, value := range c.Header {
		req.Header.Set(name, value)
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
		if ec.IdempotencyKey != "" {
			// The key identifies the call in proxies' logs even when the
			// provider ignores it, as GitHub and Sentry do.
			req.Header.Set(IdempotencyKeyHeader, ec.IdempotencyKey)
		}
	}

	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, TransportError(ctx, c.Provider, err)
	}
	defer CloseBody(resp.Body, c.MaxBytes)

	// The status is classified before the size and read errors: a refusal
	// is told apart by its status whatever became of its body.
	raw, readErr := ReadBody(resp.Body, c.MaxBytes)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.StatusError(resp, raw, r.Subject, ec.Token)
	}
	if errors.Is(readErr, ErrTooLarge) {
		return nil, &executors.Error{
			Code:    "response_too_large",
			Message: fmt.Sprintf("%s's answer about %s is larger than %d bytes", c.Provider, r.Subject, c.MaxBytes),
		}
	}
	if readErr != nil {
		return nil, TransportError(ctx, c.Provider, readErr)
	}
	if r.AllowEmpty && len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		return nil, &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("%s answered HTTP %d with a body that is not JSON", c.Provider, resp.StatusCode),
			Retryable: true,
		}
	}
	return &Answer{Body: json.RawMessage(raw), Header: resp.Header}, nil
}

// URL is the URL of r: BaseURL, each segment escaped on its own, the
// trailing slash if the provider wants one, and the query.
func (c *REST) URL(r *Request) string {
	var b strings.Builder
	b.WriteString(c.BaseURL)
	for _, seg := range r.Segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(seg))
	}
	if c.TrailingSlash {
		b.WriteByte('/')
	}
	if len(r.Query) > 0 {
		b.WriteByte('?')
		b.WriteString(r.Query.Encode())
	}
	return b.String()
}
