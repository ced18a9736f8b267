package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook"
)

// webhookView is the API shape of a webhook endpoint; the secret is shown
// only by create and rotate-secret.
type webhookView struct {
	ID             uuid.UUID           `json:"id"`
	URL            string              `json:"url"`
	Events         []invocation.Notice `json:"events"`
	Description    string              `json:"description"`
	Enabled        bool                `json:"enabled"`
	FailingSince   *time.Time          `json:"failing_since"`
	DisabledAt     *time.Time          `json:"disabled_at"`
	DisabledReason *string             `json:"disabled_reason"`
	// PreviousValidUntil is until when the secret the last rotation
	// replaced still signs deliveries next to the current one; null when
	// it does not (any more), by Postgres's clock, as the deliveries
	// decide (webhookstore).
	PreviousValidUntil *time.Time `json:"previous_valid_until"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
}

func viewWebhook(e webhook.Endpoint) webhookView {
	return webhookView{
		ID: e.ID, URL: e.URL, Events: e.Events, Description: e.Description, Enabled: e.Enabled,
		FailingSince: e.FailingSince, DisabledAt: e.DisabledAt, DisabledReason: e.DisabledReason,
		PreviousValidUntil: e.PreviousValidUntil, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
	}
}

type deliveryView struct {
	ID             uuid.UUID       `json:"id"`
	WebhookID      uuid.UUID       `json:"webhook_id"`
	EventID        int64           `json:"event_id"`
	EventType      string          `json:"event_type"`
	Status         string          `json:"status"`
	Attempts       int32           `json:"attempts"`
	LastStatusCode *int32          `json:"last_status_code"`
	LastError      *string         `json:"last_error"`
	LastLatencyMs  *int32          `json:"last_latency_ms"`
	NextAttemptAt  *time.Time      `json:"next_attempt_at"`
	DeliveredAt    *time.Time      `json:"delivered_at"`
	CreatedAt      time.Time       `json:"created_at"`
	AttemptLog     json.RawMessage `json:"attempt_log"`
}

// webhooksCarryEverySource is why a token with a sources claim creates,
// changes, rotates or deletes no webhook.
const webhooksCarryEverySource = "a webhook receives the invocations of every source"

type webhookBody struct {
	URL         *string             `json:"url"`
	Events      []invocation.Notice `json:"events"`
	Description *string             `json:"description"`
	Enabled     *bool               `json:"enabled"`
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := unnarrowed(c, webhooksCarryEverySource); err != nil {
		return err
	}
	var body webhookBody
	if err := decode(r, &body, false); err != nil {
		return err
	}
	if body.Enabled != nil {
		return invalidField("enabled", "a webhook is created enabled; PATCH it to disable")
	}
	ep, secret, err := s.webhooks.Create(r.Context(), c.Org, &webhook.Params{URL: body.URL, Events: body.Events, Description: body.Description})
	if err != nil {
		return err
	}
	s.record(r, &audit.Change{Action: "webhook.create", TargetType: "webhook", TargetID: ep.ID.String(), After: auditedWebhook(ep)})
	writeJSON(w, http.StatusCreated, map[string]any{"webhook": viewWebhook(ep), "secret": secret})
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	eps, err := s.webhooks.List(r.Context(), c.Org)
	if err != nil {
		return err
	}
	views := make([]webhookView, len(eps))
	for i, e := range eps {
		views[i] = viewWebhook(e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": views})
	return nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	ep, err := s.webhooks.Get(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhook": viewWebhook(ep)})
	return nil
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := unnarrowed(c, webhooksCarryEverySource); err != nil {
		return err
	}
	var body webhookBody
	if err := decode(r, &body, false); err != nil {
		return err
	}
	before, err := s.webhookBefore(r, c)
	if err != nil {
		return err
	}
	ep, err := s.webhooks.Update(r.Context(), c.Org, r.PathValue("id"), &webhook.Params{
		URL: body.URL, Events: body.Events, Description: body.Description, Enabled: body.Enabled,
	})
	if err != nil {
		return err
	}
	action := "webhook.update"
	if before != nil && !before.Enabled && ep.Enabled {
		action = "webhook.reenable"
	}
	s.record(r, &audit.Change{Action: action, TargetType: "webhook", TargetID: ep.ID.String(), Before: before,
		After: struct {
			webhookView
			URLChanged bool `json:"url_changed"`
		}{auditedWebhook(ep), body.URL != nil}})
	writeJSON(w, http.StatusOK, map[string]any{"webhook": viewWebhook(ep)})
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := unnarrowed(c, webhooksCarryEverySource); err != nil {
		return err
	}
	before, err := s.webhookBefore(r, c)
	if err != nil {
		return err
	}
	if err := s.webhooks.Delete(r.Context(), c.Org, r.PathValue("id")); err != nil {
		return err
	}
	s.record(r, &audit.Change{Action: "webhook.delete", TargetType: "webhook", TargetID: r.PathValue("id"), Before: before})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := unnarrowed(c, webhooksCarryEverySource); err != nil {
		return err
	}
	overlap, err := decodeOverlap(r)
	if err != nil {
		return err
	}
	before, err := s.webhookBefore(r, c)
	if err != nil {
		return err
	}
	ep, secret, err := s.webhooks.RotateSecret(r.Context(), c.Org, r.PathValue("id"), overlap)
	if err != nil {
		return err
	}
	s.record(r, &audit.Change{Action: "webhook.rotate_secret", TargetType: "webhook", TargetID: ep.ID.String(), Before: before,
		After: struct {
			webhookView
			SecretChanged bool `json:"secret_changed"`
		}{auditedWebhook(ep), true}})
	view := viewWebhook(ep)
	writeJSON(w, http.StatusOK, map[string]any{"webhook": view, "secret": secret, "previous_valid_until": view.PreviousValidUntil})
	return nil
}

// decodeOverlap reads rotate-secret's optional body, {"overlap": "24h"}:
// how long the secret replaced keeps signing next to the new one (a Go
// duration, 0s for not at all). No body, or no overlap, is
// webhook.DefaultOverlap.
func decodeOverlap(r *http.Request) (time.Duration, error) {
	body, err := readBody(r)
	if err != nil {
		return 0, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return webhook.DefaultOverlap, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		Overlap any `json:"overlap"`
	}
	if err := decode(r, &in, false); err != nil {
		return 0, err
	}
	if in.Overlap == nil {
		return webhook.DefaultOverlap, nil
	}
	text, ok := in.Overlap.(string)
	if !ok {
		return 0, invalidField("overlap", `overlap must be a duration such as "24h", "90m" or "0s"`)
	}
	overlap, err := time.ParseDuration(text)
	if err != nil {
		return 0, invalidField("overlap", `overlap must be a duration such as "24h", "90m" or "0s", not %q`, text)
	}
	if overlap < 0 || overlap > webhook.MaxOverlap {
		return 0, invalidField("overlap", "overlap must be between 0s and 168h, not %s", text)
	}
	return overlap, nil
}

// webhookBefore is the webhook of the path before a change, for the audit
// trail (nil when nothing is recorded).
func (s *Server) webhookBefore(r *http.Request, c *auth.Claims) (*webhookView, error) {
	if s.audit == nil {
		return nil, nil
	}
	ep, err := s.webhooks.Get(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	v := auditedWebhook(ep)
	return &v, nil
}

// auditedWebhook is a webhook as the audit trail keeps it: its URL through
// auditURL, since many receivers (a Slack incoming webhook,
// hooks.slack.com/services/T…/B…/<secret>) take their secret in it. The
// webhook's own API shows admins the whole URL, which they may change.
func auditedWebhook(e webhook.Endpoint) webhookView {
	v := viewWebhook(e)
	v.URL = auditURL(v.URL)
	return v
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	ds, err := s.webhooks.Deliveries(r.Context(), c.Org, r.PathValue("id"), c.Sources, page.Limit, page.Offset)
	if err != nil {
		return err
	}
	views := make([]deliveryView, len(ds))
	for i, d := range ds {
		views[i] = deliveryView{
			ID: d.ID, WebhookID: d.WebhookID, EventID: d.EventID, EventType: d.EventType, Status: d.Status, Attempts: d.Attempts,
			LastStatusCode: d.LastStatusCode, LastError: d.LastError, LastLatencyMs: d.LastLatencyMs, NextAttemptAt: d.NextAttemptAt,
			DeliveredAt: d.DeliveredAt, CreatedAt: d.CreatedAt, AttemptLog: d.AttemptLog,
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": views})
	return nil
}
