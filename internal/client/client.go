// Package client is a typed client of outboxd's HTTP API: the requests
// the agent CLI, the benchmark and the test harness make, and a reader of
// the API's event streams. It speaks the API's JSON and depends on nothing
// of the server.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Client calls one outboxd with one bearer token.
type Client struct {
	// BaseURL is the API's address, such as http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as the bearer token; empty sends no Authorization.
	Token string
	// HTTP sends the requests; nil uses http.DefaultClient.
	HTTP *http.Client
}

// New returns a client of the API at baseURL using token.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token}
}

// Error is an answer of the API outside 2xx. Code, Message and Details
// come from its {"error":{"code","message","details"}} body when it has
// one.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
	// RetryAfter is the answer's Retry-After in seconds; zero without one.
	RetryAfter time.Duration
	// Body is the answer's body as sent.
	Body []byte
}

// Error reads "HTTP <status>: <message>", the body itself when the answer
// has no message.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = string(e.Body)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, strings.TrimSpace(msg))
}

// ErrorBody is the API's error object, as sent for a whole answer and for
// each failed item of a batch.
type ErrorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// newError decodes an answer outside 2xx.
func newError(resp *http.Response, body []byte) *Error {
	e := &Error{Status: resp.StatusCode, Body: body}
	var wire struct {
		Error ErrorBody `json:"error"`
	}
	if json.Unmarshal(body, &wire) == nil {
		e.Code, e.Message, e.Details = wire.Error.Code, wire.Error.Message, wire.Error.Details
	}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	return e
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) newRequest(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	return req, nil
}

// Do sends one request to path (which starts with /v1/...) and returns
// the answer, whatever its status, with its body read and closed; the
// request sent is the answer's Request. body, when not nil, is sent as
// application/json unless header says otherwise; header's values replace
// the client's. The error is a transport error only: "calling outboxd: ..."
// or "reading the answer: ...".
func (c *Client) Do(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Response, []byte, error) {
	req, err := c.newRequest(ctx, method, path, body, header)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("calling outboxd: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp, raw, nil
}

// Open sends a GET to path and returns the answer unread, for an event
// stream; the caller closes its body. The error is a transport error only.
func (c *Client) Open(ctx context.Context, path string, header http.Header) (*http.Response, error) {
	req, err := c.newRequest(ctx, http.MethodGet, path, nil, header)
	if err != nil {
		return nil, err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling outboxd: %w", err)
	}
	return resp, nil
}

// call sends in as JSON (nothing when nil) and decodes a 2xx answer into
// out (when not nil); any other answer is an *Error. It returns the
// answer's status and body.
func (c *Client) call(ctx context.Context, method, path string, in, out any, header http.Header) (int, []byte, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, nil, err
		}
	}
	resp, raw, err := c.Do(ctx, method, path, body, header)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, raw, newError(resp, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, raw, fmt.Errorf("decoding the answer of %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, raw, nil
}
