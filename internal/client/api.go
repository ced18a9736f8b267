package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// Invocation is the API's view of an invocation (the fields the client's
// users read; the API sends more).
type Invocation struct {
	ID             string          `json:"id"`
	OrganizationID string          `json:"organization_id"`
	SessionID      *string         `json:"session_id"`
	RequestedBy    string          `json:"requested_by"`
	Integration    string          `json:"integration"`
	Action         string          `json:"action"`
	RiskTier       string          `json:"risk_tier"`
	Mode           string          `json:"mode"`
	Params         json.RawMessage `json:"params"`
	Status         string          `json:"status"`
	Result         json.RawMessage `json:"result"`
	Error          *string         `json:"error"`
	DeniedReason   *string         `json:"denied_reason"`
	ApprovedBy     *string         `json:"approved_by"`
	ExpiresAt      *time.Time      `json:"expires_at"`
	CreatedAt      time.Time       `json:"created_at"`
	CompletedAt    *time.Time      `json:"completed_at"`
	ExternalID     *string         `json:"external_id"`
	IdempotencyKey *string         `json:"idempotency_key"`
	Attempt        int32           `json:"attempt"`
}

// Final reports whether status is one an invocation never leaves.
func Final(status string) bool {
	switch status {
	case "completed", "failed", "denied", "expired", "skipped", "cancelled":
		return true
	}
	return false
}

// Action is one entry of the catalog of available actions.
type Action struct {
	Source      string `json:"source"`
	Action      string `json:"action"`
	Description string `json:"description"`
	Mode        string `json:"mode"`
	RiskTier    string `json:"risk_tier"`
	Delivery    string `json:"delivery"`
}

// Catalog is the answer of .../actions/available.
type Catalog struct {
	Actions []Action `json:"actions"`
	// Raw is the answer as the API sent it.
	Raw json.RawMessage `json:"-"`
}

// InvokeRequest is the body of an invoke.
type InvokeRequest struct {
	Integration string `json:"integration"`
	Action      string `json:"action"`
	Params      any    `json:"params"`
}

// InvokeResult is the answer of an invoke: 200 when the action ran at
// once, 202 while it waits for approval or a worker, and an error status
// (403 denied, 502 failed, 410 expired, ...) that still names the
// invocation.
type InvokeResult struct {
	// Status is the HTTP status; the answer's own "status" (the
	// invocation's, on a 202) is not it.
	Status     int             `json:"-"`
	Invocation Invocation      `json:"invocation"`
	Result     json.RawMessage `json:"result"`
}

// EnvelopeTool names an envelope's action.
type EnvelopeTool struct {
	Name   string `json:"name,omitempty"`
	Source string `json:"source,omitempty"`
	Action string `json:"action,omitempty"`
}

// EnvelopeConstraints are an envelope's execution constraints.
type EnvelopeConstraints struct {
	RateBucket    string     `json:"rate_bucket,omitempty"`
	MustRunBefore *time.Time `json:"must_run_before,omitempty"`
}

// Envelope is a Universal Action Envelope to enqueue.
type Envelope struct {
	ExternalID   string               `json:"external_id"`
	AutomationID string               `json:"automation_id,omitempty"`
	Tool         EnvelopeTool         `json:"tool"`
	Args         any                  `json:"args"`
	Risk         string               `json:"risk,omitempty"`
	Approval     string               `json:"approval,omitempty"`
	Constraints  *EnvelopeConstraints `json:"constraints,omitempty"`
}

// EnvelopeView is the API's envelope view of an invocation (the fields
// the client's users read).
type EnvelopeView struct {
	ActionID         string          `json:"action_id"`
	ExternalID       string          `json:"external_id"`
	TenantID         string          `json:"tenant_id"`
	Tool             EnvelopeTool    `json:"tool"`
	Args             json.RawMessage `json:"args"`
	Approval         string          `json:"approval"`
	Mode             string          `json:"mode"`
	InvocationStatus string          `json:"invocation_status"`
	InvocationURL    string          `json:"invocation_url"`
	// Created is whether the request created the invocation (false when
	// an envelope of the same external id already had).
	Created bool `json:"created"`
}

// BatchItem is one envelope of a batch's answer: its view, or its error.
type BatchItem struct {
	EnvelopeView
	Error *ErrorBody `json:"error"`
}

// Session is the part of the API scoped to one sandbox session.
type Session struct {
	c  *Client
	ID string
}

// Session returns the routes of session id.
func (c *Client) Session(id string) *Session { return &Session{c: c, ID: id} }

func (s *Session) path(rest string) string {
	return "/v1/sessions/" + url.PathEscape(s.ID) + rest
}

// Available lists the actions the session may use.
func (s *Session) Available(ctx context.Context) (*Catalog, error) {
	var cat Catalog
	_, raw, err := s.c.call(ctx, http.MethodGet, s.path("/actions/available"), nil, &cat, nil)
	if err != nil {
		return nil, err
	}
	cat.Raw = raw
	return &cat, nil
}

// Guide returns an integration's guide (markdown).
func (s *Session) Guide(ctx context.Context, integration string) (string, error) {
	_, raw, err := s.c.call(ctx, http.MethodGet, s.path("/actions/guide/"+url.PathEscape(integration)), nil, nil, nil)
	if err != nil {
		return "", err
	}
	return string(raw), nil
}

// Invoke invokes an action with an idempotency key (none when empty). The
// result is not nil whenever the answer names an invocation, even with an
// error (an *Error for a status outside 2xx).
func (s *Session) Invoke(ctx context.Context, in InvokeRequest, idempotencyKey string) (*InvokeResult, error) {
	var header http.Header
	if idempotencyKey != "" {
		header = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	status, raw, err := s.c.call(ctx, http.MethodPost, s.path("/actions/invoke"), in, nil, header)
	var apiErr *Error
	if err != nil && !errors.As(err, &apiErr) {
		return nil, err
	}
	res := &InvokeResult{Status: status}
	if json.Unmarshal(raw, res) != nil || res.Invocation.ID == "" {
		if err == nil {
			err = errors.New("the invoke answer names no invocation")
		}
		return nil, err
	}
	return res, err
}

// Invocation reads one of the session's invocations.
func (s *Session) Invocation(ctx context.Context, id string) (*Invocation, error) {
	return s.c.invocation(ctx, s.path("/actions/invocations/"+url.PathEscape(id)))
}

// Cancel undoes one of the session's invocations that has not started
// (pending, or approved but not yet executing) and returns it cancelled.
// Another session's or an unknown one is an *Error with Code "not_found"
// (404); one that has started or ended, Code "conflict" (409).
func (s *Session) Cancel(ctx context.Context, id string) (*Invocation, error) {
	return s.c.decideAt(ctx, s.path("/actions/invocations/"+url.PathEscape(id)+"/cancel"), nil)
}

// Events opens the session's event stream after lastID (from now when
// empty).
func (s *Session) Events(ctx context.Context, lastID string) (*Stream, error) {
	return s.c.Events(ctx, s.path("/events"), lastID)
}

// Invocation reads an invocation of the organization.
func (c *Client) Invocation(ctx context.Context, id string) (*Invocation, error) {
	return c.invocation(ctx, "/v1/invocations/"+url.PathEscape(id))
}

func (c *Client) invocation(ctx context.Context, path string) (*Invocation, error) {
	var body struct {
		Invocation Invocation `json:"invocation"`
	}
	if _, _, err := c.call(ctx, http.MethodGet, path, nil, &body, nil); err != nil {
		return nil, err
	}
	return &body.Invocation, nil
}

// Approve approves a pending invocation; mode is "once" or "always".
func (c *Client) Approve(ctx context.Context, id, mode string) (*Invocation, error) {
	return c.decide(ctx, id, "/approve", map[string]string{"mode": mode})
}

// Deny denies a pending invocation with a reason.
func (c *Client) Deny(ctx context.Context, id, reason string) (*Invocation, error) {
	return c.decide(ctx, id, "/deny", map[string]string{"reason": reason})
}

func (c *Client) decide(ctx context.Context, id, verb string, in any) (*Invocation, error) {
	return c.decideAt(ctx, "/v1/invocations/"+url.PathEscape(id)+verb, in)
}

// decideAt POSTs in to path, a transition of one invocation, and returns
// the invocation of the answer.
func (c *Client) decideAt(ctx context.Context, path string, in any) (*Invocation, error) {
	var body struct {
		Invocation Invocation `json:"invocation"`
	}
	if _, _, err := c.call(ctx, http.MethodPost, path, in, &body, nil); err != nil {
		return nil, err
	}
	return &body.Invocation, nil
}

// Enqueue enqueues one envelope.
func (c *Client) Enqueue(ctx context.Context, e *Envelope) (*EnvelopeView, error) {
	var view EnvelopeView
	status, _, err := c.call(ctx, http.MethodPost, "/v1/envelopes", e, &view, nil)
	if err != nil {
		return nil, err
	}
	view.Created = status == http.StatusCreated
	return &view, nil
}

// EnqueueBatch enqueues envelopes in one request; the answer has an item
// for each, in order.
func (c *Client) EnqueueBatch(ctx context.Context, envelopes []*Envelope) ([]BatchItem, error) {
	if envelopes == nil {
		envelopes = []*Envelope{}
	}
	var body struct {
		Envelopes []BatchItem `json:"envelopes"`
	}
	in := map[string]any{"envelopes": envelopes}
	if _, _, err := c.call(ctx, http.MethodPost, "/v1/envelopes/batch", in, &body, nil); err != nil {
		return nil, err
	}
	return body.Envelopes, nil
}

// Envelope reads an envelope by its action id.
func (c *Client) Envelope(ctx context.Context, actionID string) (*EnvelopeView, error) {
	var view EnvelopeView
	if _, _, err := c.call(ctx, http.MethodGet, "/v1/envelopes/"+url.PathEscape(actionID), nil, &view, nil); err != nil {
		return nil, err
	}
	return &view, nil
}

// CancelEnvelope cancels an envelope that has not run.
func (c *Client) CancelEnvelope(ctx context.Context, actionID string) (*EnvelopeView, error) {
	var view EnvelopeView
	if _, _, err := c.call(ctx, http.MethodDelete, "/v1/envelopes/"+url.PathEscape(actionID), nil, &view, nil); err != nil {
		return nil, err
	}
	return &view, nil
}

// PutCredential stores the organization's credential for integration;
// kind is "api_key", "oauth" or "" (the integration's default).
func (c *Client) PutCredential(ctx context.Context, integration, token, kind string) error {
	in := map[string]string{"token": token}
	if kind != "" {
		in["token_kind"] = kind
	}
	_, _, err := c.call(ctx, http.MethodPut, "/v1/credentials/"+url.PathEscape(integration), in, nil, nil)
	return err
}

// PutActionModes replaces the organization's mode overrides, keyed
// "<source>:<action>".
func (c *Client) PutActionModes(ctx context.Context, modes map[string]string) error {
	_, _, err := c.call(ctx, http.MethodPut, "/v1/action-modes", modes, nil, nil)
	return err
}

// Events opens the event stream at path (/v1/events or a session's
// events, with a query when wanted) after lastID, sent as Last-Event-ID
// (from now when empty). An answer other than 200 is an *Error, one that
// is not an event stream a *ContentTypeError.
func (c *Client) Events(ctx context.Context, path string, lastID string) (*Stream, error) {
	var header http.Header
	if lastID != "" {
		header = http.Header{"Last-Event-ID": {lastID}}
	}
	resp, err := c.Open(ctx, path, header)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := readAll(resp.Body)
		return nil, newError(resp, raw)
	}
	if ct := resp.Header.Get("Content-Type"); !isEventStream(ct) {
		resp.Body.Close()
		return nil, &ContentTypeError{ContentType: ct}
	}
	return NewStream(resp.Body, lastID), nil
}
