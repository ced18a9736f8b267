// Package webhookstore stores the organizations' webhook endpoints and
// their deliveries. The endpoints' CRUD and the delivery jobs work
// through the pool it is given; the relay consumer's statements run in
// the relay's transaction.
package webhookstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// Store reads and writes endpoints and deliveries.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, q: dbsqlc.New()}
}

// Endpoint is a webhook endpoint.
type Endpoint struct {
	ID             uuid.UUID
	OrganizationID string
	URL            string
	Events         []invocation.Notice
	Description    string
	Enabled        bool
	// FailingSince is the first failed attempt since the last success.
	FailingSince *time.Time
	// DisabledAt and DisabledReason say when and why outboxd disabled the
	// endpoint after a long failure.
	DisabledAt     *time.Time
	DisabledReason *string
	// PreviousValidUntil is when the secret replaced by the last rotation
	// stops signing deliveries next to the current one; nil when it does
	// not, by Postgres's clock, as the deliveries decide (a rotation with
	// no overlap, or none, or an overlap that has ended).
	PreviousValidUntil *time.Time
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

func fromRow(r *dbsqlc.Webhook) Endpoint {
	return Endpoint{
		ID: r.ID, OrganizationID: r.OrganizationID, URL: r.Url, Events: notices(r.Events), Description: r.Description,
		Enabled: r.Enabled, FailingSince: r.FailingSince, DisabledAt: r.DisabledAt, DisabledReason: r.DisabledReason,
		PreviousValidUntil: r.PreviousUntil, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func notices(events []string) []invocation.Notice {
	out := make([]invocation.Notice, len(events))
	for i, e := range events {
		out[i] = invocation.Notice(e)
	}
	return out
}

// signing returns ep with PreviousValidUntil only while the previous
// secret still signs (previousSigns, which Postgres decided).
func signing(ep Endpoint, previousSigns bool) Endpoint {
	if !previousSigns {
		ep.PreviousValidUntil = nil
	}
	return ep
}

// found converts a row and its error: false, with no error, when there is
// no row. The rows of WebhookUpdate and WebhookSetSecret have Postgres's
// word on the previous secret in previous_until: the first forgets one
// whose overlap has ended, the second sets it anew.
func found(r dbsqlc.Webhook, err error) (Endpoint, bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return Endpoint{}, false, nil
	}
	if err != nil {
		return Endpoint{}, false, err
	}
	return fromRow(&r), true, nil
}

// Fields are an endpoint's settable fields, checked; nil leaves a field as
// it is (on update) or empty (on insert).
type Fields struct {
	URL         *string
	Events      []string
	Description *string
	Enabled     *bool
}

// Insert adds org's endpoint id, enabled, with its sealed signing secret.
func (s *Store) Insert(ctx context.Context, org string, id uuid.UUID, f *Fields, secretSealed []byte) (Endpoint, error) {
	r, err := s.q.WebhookInsert(ctx, s.pool, dbsqlc.WebhookInsertParams{
		ID: id, OrganizationID: org, Url: deref(f.URL), Events: f.Events, Description: deref(f.Description),
		SecretSealed: secretSealed,
	})
	if err != nil {
		return Endpoint{}, err
	}
	return fromRow(&r), nil
}

// List returns org's endpoints, oldest first.
func (s *Store) List(ctx context.Context, org string) ([]Endpoint, error) {
	rows, err := s.q.WebhookList(ctx, s.pool, org)
	if err != nil {
		return nil, err
	}
	out := make([]Endpoint, len(rows))
	for i := range rows {
		out[i] = signing(fromRow(&rows[i].Webhook), rows[i].PreviousSigns)
	}
	return out, nil
}

// Get returns one endpoint of org, and false when there is none.
func (s *Store) Get(ctx context.Context, org string, id uuid.UUID) (Endpoint, bool, error) {
	r, err := s.q.WebhookGet(ctx, s.pool, dbsqlc.WebhookGetParams{ID: id, OrganizationID: org})
	ep, ok, err := found(r.Webhook, err)
	return signing(ep, r.PreviousSigns), ok, err
}

// Update changes the fields f sets of one endpoint of org (enabling it
// clears its disabling and its failure streak), and returns false when
// there is none.
func (s *Store) Update(ctx context.Context, org string, id uuid.UUID, f *Fields) (Endpoint, bool, error) {
	return found(s.q.WebhookUpdate(ctx, s.pool, dbsqlc.WebhookUpdateParams{
		ID: id, OrganizationID: org, Url: f.URL, Events: f.Events, Description: f.Description, Enabled: f.Enabled,
	}))
}

// Delete removes one endpoint of org with its deliveries, and returns
// false when there was none.
func (s *Store) Delete(ctx context.Context, org string, id uuid.UUID) (bool, error) {
	n, err := s.q.WebhookDelete(ctx, s.pool, dbsqlc.WebhookDeleteParams{ID: id, OrganizationID: org})
	return n > 0, err
}

// SetSecret replaces the sealed signing secret of one endpoint of org, and
// returns false when there is none. The secret replaced, sealed as it was,
// keeps signing for overlap after Postgres's now (not at all when 0); one
// replaced before it stops.
func (s *Store) SetSecret(ctx context.Context, org string, id uuid.UUID, secretSealed []byte, overlap time.Duration) (Endpoint, bool, error) {
	return found(s.q.WebhookSetSecret(ctx, s.pool, dbsqlc.WebhookSetSecretParams{
		ID: id, OrganizationID: org, SecretSealed: secretSealed, OverlapSeconds: overlap.Seconds(),
	}))
}

// Delivery is one notice to one endpoint and how its attempts went.
type Delivery struct {
	ID             uuid.UUID
	WebhookID      uuid.UUID
	EventID        int64
	EventType      string
	Status         string
	Attempts       int32
	LastStatusCode *int32
	LastError      *string
	LastLatencyMs  *int32
	AttemptLog     json.RawMessage
	NextAttemptAt  *time.Time
	DeliveredAt    *time.Time
	CreatedAt      time.Time
}

// Deliveries returns max deliveries of org's endpoint webhookID, newest
// first, after skipping skip; with sources (a token's sources claim as a
// filter; nil: any source), only those of the events of the invocations
// of those sources.
func (s *Store) Deliveries(ctx context.Context, org string, webhookID uuid.UUID, sources []string, maxRows, skip int32) ([]Delivery, error) {
	rows, err := s.q.DeliveryList(ctx, s.pool, dbsqlc.DeliveryListParams{
		WebhookID: webhookID, OrganizationID: org, Sources: sources, Max: maxRows, Skip: skip,
	})
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = Delivery{
			ID: r.ID, WebhookID: r.WebhookID, EventID: r.EventID, EventType: r.EventType, Status: r.Status, Attempts: r.Attempts,
			LastStatusCode: r.LastStatusCode, LastError: r.LastError, LastLatencyMs: r.LastLatencyMs, AttemptLog: r.AttemptLog,
			NextAttemptAt: r.NextAttemptAt, DeliveredAt: r.DeliveredAt, CreatedAt: r.CreatedAt,
		}
	}
	return out, nil
}

// Subscription is an enabled endpoint and the notices it wants.
type Subscription struct {
	ID             uuid.UUID
	OrganizationID string
	Events         []invocation.Notice
}

// Subscriptions returns every enabled endpoint, read in the relay's tx.
func (s *Store) Subscriptions(ctx context.Context, tx pgx.Tx) ([]Subscription, error) {
	rows, err := s.q.WebhookEndpointsEnabled(ctx, tx)
	if err != nil {
		return nil, err
	}
	out := make([]Subscription, len(rows))
	for i, r := range rows {
		out[i] = Subscription{ID: r.ID, OrganizationID: r.OrganizationID, Events: notices(r.Events)}
	}
	return out, nil
}

// InsertDelivery adds, in the relay's tx, the delivery of notice it to
// the endpoint sub with payload, and returns its id; false when the
// endpoint already has that notice's delivery.
func (s *Store) InsertDelivery(ctx context.Context, tx pgx.Tx, sub *Subscription, it *invocation.FeedItem, payload []byte) (uuid.UUID, bool, error) {
	id, err := s.q.DeliveryInsert(ctx, tx, dbsqlc.DeliveryInsertParams{
		ID: uuid.Must(uuid.NewV7()), WebhookID: sub.ID, OrganizationID: sub.OrganizationID,
		EventID: it.ID, EventType: string(it.Notice), Payload: string(payload),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return id, false, nil
	}
	return id, err == nil, err
}

// Message is a delivery as its job sends it.
type Message struct {
	ID, WebhookID   uuid.UUID
	Status, Payload string
}

// Message returns the delivery id, and false when there is none (its
// endpoint was deleted).
func (s *Store) Message(ctx context.Context, id uuid.UUID) (Message, bool, error) {
	d, err := s.q.DeliveryGet(ctx, s.pool, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, false, nil
	}
	return Message{ID: d.ID, WebhookID: d.WebhookID, Status: d.Status, Payload: d.Payload}, err == nil, err
}

// Target is an endpoint with its sealed signing secret, for its
// deliveries' jobs.
type Target struct {
	Endpoint
	SecretSealed []byte
	// PreviousSealed is the secret the last rotation replaced while it
	// still signs (previous_until after Postgres's now), else nil.
	PreviousSealed []byte
}

// Target returns the endpoint id of any organization, and false when there
// is none.
func (s *Store) Target(ctx context.Context, id uuid.UUID) (Target, bool, error) {
	r, err := s.q.WebhookGetByID(ctx, s.pool, id)
	ep, ok, err := found(r.Webhook, err)
	return Target{Endpoint: signing(ep, r.PreviousSigningSealed != nil), SecretSealed: r.Webhook.SecretSealed, PreviousSealed: r.PreviousSigningSealed}, ok, err
}

// Attempt is what a delivery's job records: Status is delivered,
// retrying, dead or cancelled; Attempted says whether it sent a request.
type Attempt struct {
	ID            uuid.UUID
	Status        string
	Attempted     bool
	StatusCode    *int32
	Error         *string
	LatencyMs     *int32
	NextAttemptAt *time.Time
}

// Record records an attempt of a delivery.
func (s *Store) Record(ctx context.Context, a *Attempt) error {
	_, err := s.q.DeliveryRecord(ctx, s.pool, dbsqlc.DeliveryRecordParams{
		ID: a.ID, Status: a.Status, Attempted: a.Attempted, StatusCode: a.StatusCode, Error: a.Error,
		LatencyMs: a.LatencyMs, NextAttemptAt: a.NextAttemptAt,
	})
	return err
}

// Succeeded records that the endpoint id took a delivery: it is failing no
// more.
func (s *Store) Succeeded(ctx context.Context, id uuid.UUID) error {
	return s.q.WebhookSucceeded(ctx, s.pool, id)
}

// Failed records a failed attempt to the endpoint id; when a delivery dies
// (dead) and the endpoint has failed for at least disableAfter, it is
// disabled. It returns the endpoint as it is after.
func (s *Store) Failed(ctx context.Context, id uuid.UUID, dead bool, disableAfter time.Duration) (Endpoint, error) {
	r, err := s.q.WebhookFailed(ctx, s.pool, dbsqlc.WebhookFailedParams{ID: id, Dead: dead, DisableAfterSeconds: disableAfter.Seconds()})
	if err != nil {
		return Endpoint{}, err
	}
	return fromRow(&r), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
