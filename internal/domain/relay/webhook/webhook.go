package webhook

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/fairness"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook/webhookstore"
	"github.com/outboxd/outboxd/internal/platform/keyed"
	"github.com/outboxd/outboxd/internal/platform/netguard"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
)

// Config configures webhook delivery.
type Config struct {
	// AllowPrivateNetworks lets endpoints be loopback or private addresses
	// (connectors.allow_private_networks). Default false.
	AllowPrivateNetworks bool
	// Timeout bounds one delivery attempt. Default 10s.
	Timeout time.Duration
	// MaxAttempts is how many times a delivery is tried before it is dead.
	// Default 8.
	MaxAttempts int
	// RetryBaseDelay is the first retry's delay; each retry doubles it, with
	// ±20% jitter. Default 10s.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the retry delay. Default 1h.
	RetryMaxDelay time.Duration
	// DisableAfter disables an endpoint when a delivery dies and the
	// endpoint has failed every attempt for at least this long. Default 72h.
	DisableAfter time.Duration
	// RelayInterval is how often the relay turns new events into
	// deliveries. Default 1s.
	RelayInterval time.Duration
	// MaxWorkers is how many deliveries run at once per worker process.
	// Default 20.
	MaxWorkers int
	// MaxEndpoints is how many endpoints one organization may have. Each
	// enabled one gets a delivery row, with the whole payload, for every
	// event it wants, and the relay reads them all on every pass. Default
	// 50.
	MaxEndpoints int
	// MaxOrgWorkers is how many of them one organization's deliveries may
	// take; its others wait (snoozed, no attempt spent) until one ends.
	// Default a quarter of MaxWorkers, at least 1.
	MaxOrgWorkers int
}

// WithDefaults returns a copy with unset fields defaulted.
func (c *Config) WithDefaults() *Config {
	return &Config{
		AllowPrivateNetworks: c.AllowPrivateNetworks,
		Timeout:              cmp.Or(c.Timeout, 10*time.Second),
		MaxAttempts:          cmp.Or(c.MaxAttempts, 8),
		RetryBaseDelay:       cmp.Or(c.RetryBaseDelay, 10*time.Second),
		RetryMaxDelay:        cmp.Or(c.RetryMaxDelay, time.Hour),
		DisableAfter:         cmp.Or(c.DisableAfter, 72*time.Hour),
		RelayInterval:        cmp.Or(c.RelayInterval, time.Second),
		MaxWorkers:           cmp.Or(c.MaxWorkers, 20),
		MaxEndpoints:         cmp.Or(c.MaxEndpoints, 50),
		MaxOrgWorkers:        cmp.Or(c.MaxOrgWorkers, max(1, cmp.Or(c.MaxWorkers, 20)/4)),
	}
}

func (c *Config) validate() error {
	switch {
	case c.MaxAttempts < 1:
		return errors.New("webhooks.max_attempts must be at least 1")
	case c.RetryMaxDelay < c.RetryBaseDelay:
		return errors.New("webhooks.retry_max_delay must not be below webhooks.retry_base_delay")
	case c.MaxWorkers < 1:
		return errors.New("webhooks.max_workers must be at least 1")
	case c.MaxEndpoints < 1:
		return errors.New("webhooks.max_endpoints must be at least 1")
	case c.MaxOrgWorkers < 1:
		return errors.New("webhooks.max_org_workers must be at least 1")
	}
	return nil
}

// Bucket is the flow bucket every endpoint gets its own of: it bounds the
// rate and the concurrency of deliveries to one endpoint, so a slow
// receiver holds at most its own slots.
var Bucket = flow.BucketConfig{Name: "webhook", Rate: 20, Interval: time.Second, Burst: 20, MaxConcurrency: 4, Scope: flow.ScopeSource}

// Deps are the service's collaborators.
type Deps struct {
	// Pool is the API's (the tenant role's): endpoints are managed through
	// it, as the caller's organization.
	Pool *pgxpool.Pool
	// Owner is the workers': the relay and the deliveries work through it,
	// for every organization.
	Owner *pgxpool.Pool
	// Box seals the signing secrets.
	Box *secretbox.Box
	// Flow holds Bucket; nil leaves deliveries unlimited.
	Flow    *flow.Limiter
	Metrics *telemetry.Metrics
	Logger  *slog.Logger
	// Payload is the data of a notice, as the event stream sends it.
	Payload func(*invocation.FeedItem) any
	// Fair counts each organization's deliveries: those of one past its
	// fair rate queue behind every other organization's. nil: none do.
	Fair *fairness.Meter
}

// Service manages endpoints and delivers to them.
type Service struct {
	deps   Deps
	cfg    *Config
	logger *slog.Logger
	api    *webhookstore.Store // the endpoints' management, on Pool
	work   *webhookstore.Store // the relay and the deliveries, on Owner
	store  *invocationstore.Store
	client *http.Client
	// orgs bounds one organization's share of the delivery workers: an
	// organization whose endpoints hang (each attempt holding a worker for
	// the whole webhooks.timeout, again on every retry) leaves the others
	// to the rest. The per-endpoint bucket does not: an organization has
	// as many endpoints as it likes.
	orgs *keyed.Limiter
}

// New returns a Service.
func New(deps *Deps, config *Config) (*Service, error) {
	cfg := config.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.Metrics == nil {
		deps.Metrics = telemetry.NewNop()
	}
	return &Service{
		deps: *deps, cfg: cfg, logger: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)),
		api: webhookstore.New(deps.Pool), work: webhookstore.New(deps.Owner), store: invocationstore.New(nil), client: netguard.Client(cfg.AllowPrivateNetworks, cfg.Timeout),
		orgs: keyed.New(cfg.MaxOrgWorkers),
	}, nil
}

// Endpoint is a webhook endpoint.
type Endpoint = webhookstore.Endpoint

// Params are an endpoint's settable fields; nil leaves a field as it is
// (on update).
type Params struct {
	URL         *string
	Events      []invocation.Notice
	Description *string
	Enabled     *bool
}

func (s *Service) check(p *Params, create bool) ([]string, error) {
	if create && p.URL == nil {
		return nil, errs.Invalid("url", "url is required")
	}
	if p.URL != nil {
		if len(*p.URL) > 2048 {
			return nil, errs.Invalid("url", "url is longer than 2048 bytes")
		}
		if err := netguard.CheckURL(*p.URL, s.cfg.AllowPrivateNetworks); err != nil {
			return nil, errs.Invalid("url", "url: %s", err)
		}
	}
	if p.Description != nil && len(*p.Description) > 1000 {
		return nil, errs.Invalid("description", "description is longer than 1000 bytes")
	}
	if create && len(p.Events) == 0 {
		return nil, errs.Invalid("events", "events must name at least one of action_approval_request, action_approval_result, action_completed")
	}
	var events []string
	for i, e := range p.Events {
		if !slices.Contains(invocation.Notices, e) {
			return nil, errs.Invalid(fmt.Sprintf("events[%d]", i), "events[%d]: unknown event %q (use action_approval_request, action_approval_result, action_completed)", i, e)
		}
		if !slices.Contains(events, string(e)) { // an event named twice is subscribed once
			events = append(events, string(e))
		}
	}
	return events, nil
}

// newSecret returns a signing secret in the Standard Webhooks form.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// Create adds an endpoint and returns it with its signing secret, which is
// shown only now.
func (s *Service) Create(ctx context.Context, org string, p *Params) (Endpoint, string, error) {
	events, err := s.check(p, true)
	if err != nil {
		return Endpoint{}, "", err
	}
	id := uuid.Must(uuid.NewV7())
	secret := newSecret()
	ep, err := s.api.Insert(ctx, org, id, &webhookstore.Fields{URL: p.URL, Events: events, Description: p.Description},
		s.deps.Box.Seal([]byte(secret), id[:]))
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("creating webhook: %w", err)
	}
	// Counted after the insert, so that creates racing each other cannot
	// pass the cap together: an endpoint is kept only if the count that
	// includes it (and every endpoint created before) is within it.
	all, err := s.api.List(ctx, org)
	if err == nil && len(all) <= s.cfg.MaxEndpoints {
		return ep, secret, nil
	}
	if _, derr := s.api.Delete(context.WithoutCancel(ctx), org, id); derr != nil {
		return Endpoint{}, "", fmt.Errorf("removing a webhook over the cap: %w", derr)
	}
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("counting webhooks: %w", err)
	}
	return Endpoint{}, "", errs.Errorf(errs.Conflict, "this organization has %d webhooks, the most it may have (webhooks.max_endpoints): delete one first", s.cfg.MaxEndpoints)
}

// List returns the organization's endpoints, oldest first.
func (s *Service) List(ctx context.Context, org string) ([]Endpoint, error) {
	out, err := s.api.List(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("listing webhooks: %w", err)
	}
	return out, nil
}

// Get returns one endpoint.
func (s *Service) Get(ctx context.Context, org, id string) (Endpoint, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return Endpoint{}, errs.Errorf(errs.NotFound, "webhook not found: %s", id)
	}
	ep, ok, err := s.api.Get(ctx, org, uid)
	return one(ep, ok, err, id)
}

// Update changes an endpoint; enabling it clears an automatic disabling.
func (s *Service) Update(ctx context.Context, org, id string, p *Params) (Endpoint, error) {
	events, err := s.check(p, false)
	if err != nil {
		return Endpoint{}, err
	}
	if p.Events != nil && len(events) == 0 {
		return Endpoint{}, errs.Invalid("events", "events must name at least one event")
	}
	uid, err := uuid.Parse(id)
	if err != nil {
		return Endpoint{}, errs.Errorf(errs.NotFound, "webhook not found: %s", id)
	}
	ep, ok, err := s.api.Update(ctx, org, uid, &webhookstore.Fields{URL: p.URL, Events: events, Description: p.Description, Enabled: p.Enabled})
	return one(ep, ok, err, id)
}

// Delete removes an endpoint with its deliveries; their jobs find nothing
// to do.
func (s *Service) Delete(ctx context.Context, org, id string) error {
	uid, err := uuid.Parse(id)
	if err != nil {
		return errs.Errorf(errs.NotFound, "webhook not found: %s", id)
	}
	deleted, err := s.api.Delete(ctx, org, uid)
	if err != nil {
		return fmt.Errorf("deleting webhook: %w", err)
	}
	if !deleted {
		return errs.Errorf(errs.NotFound, "webhook not found: %s", id)
	}
	return nil
}

// DefaultOverlap is how long a rotated secret keeps signing by default,
// and MaxOverlap the longest it may.
const (
	DefaultOverlap = 24 * time.Hour
	MaxOverlap     = 7 * 24 * time.Hour
)

// RotateSecret replaces an endpoint's signing secret and returns the new
// one. Attempts from now on are signed with it and, for overlap (0 to
// MaxOverlap; 0: not at all), with the secret it replaces too, so that a
// receiver verifying with either accepts them; a secret replaced by an
// earlier rotation stops signing. The endpoint's PreviousValidUntil says
// until when.
func (s *Service) RotateSecret(ctx context.Context, org, id string, overlap time.Duration) (Endpoint, string, error) {
	if overlap < 0 || overlap > MaxOverlap {
		return Endpoint{}, "", errs.Invalid("overlap", "overlap must be between 0s and %s, not %s", "168h", overlap)
	}
	uid, err := uuid.Parse(id)
	if err != nil {
		return Endpoint{}, "", errs.Errorf(errs.NotFound, "webhook not found: %s", id)
	}
	secret := newSecret()
	ep, ok, err := s.api.SetSecret(ctx, org, uid, s.deps.Box.Seal([]byte(secret), uid[:]), overlap)
	ep, err = one(ep, ok, err, id)
	return ep, secret, err
}

// Delivery is one notice to one endpoint and how its attempts went.
type Delivery = webhookstore.Delivery

// Deliveries returns an endpoint's deliveries, newest first: with a
// sources claim, only those of the invocations of the sources it allows
// (a delivery whose invocation is gone is of no source), filtered before
// the page is cut.
func (s *Service) Deliveries(ctx context.Context, org, id string, sources auth.SourceClaim, limit, offset int) ([]Delivery, error) {
	ep, err := s.Get(ctx, org, id)
	if err != nil {
		return nil, err
	}
	out, err := s.api.Deliveries(ctx, org, ep.ID, sources.Filter(), int32(cmp.Or(limit, 50)), int32(offset))
	if err != nil {
		return nil, fmt.Errorf("listing deliveries: %w", err)
	}
	return out, nil
}

// one turns the store's answer for the endpoint id into the service's:
// a missing endpoint is errs.NotFound.
func one(ep Endpoint, ok bool, err error, id string) (Endpoint, error) {
	if err != nil {
		return Endpoint{}, fmt.Errorf("loading webhook: %w", err)
	}
	if !ok {
		return Endpoint{}, errs.Errorf(errs.NotFound, "webhook not found: %s", id)
	}
	return ep, nil
}
