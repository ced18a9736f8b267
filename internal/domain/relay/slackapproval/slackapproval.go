package slackapproval

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/fairness"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval/slackapprovalstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/etag"
	"github.com/outboxd/outboxd/internal/platform/netguard"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/outbox"
)

// Config configures Slack approvals.
type Config struct {
	// Channel is where approval requests are posted
	// (notifications.slack.channel); an organization's own channel takes
	// precedence. Empty: only organizations that set one get messages.
	Channel string
	// SigningSecret verifies Slack's interactivity requests
	// (notifications.slack.signing_secret). Empty: the interactivity
	// endpoint answers 404.
	SigningSecret string
	// BaseURL is Slack's Web API root (providers.slack.base_url).
	BaseURL string
	// RelayInterval is how often new events are turned into messages.
	// Default 1s.
	RelayInterval time.Duration
	// AllowPrivateNetworks lets response_url reach internal addresses
	// (tests).
	AllowPrivateNetworks bool
}

// TokenSource resolves the organization's Slack token.
type TokenSource interface {
	Token(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error)
}

// Decider runs human decisions: the outbox service.
type Decider interface {
	Approve(ctx context.Context, p *outbox.ApproveParams) (invocation.Invocation, error)
	Deny(ctx context.Context, p *outbox.DenyParams) (invocation.Invocation, error)
	Get(ctx context.Context, org, id string, sources auth.SourceClaim) (invocation.Invocation, error)
}

// everySource is the sources claim of a click's reads: a click is no
// token's, and its approver may read any source's invocation.
var everySource auth.SourceClaim

// Deps are the service's collaborators.
type Deps struct {
	// Pool is the API's (the tenant role's): the settings are managed and
	// the clicks taken through it, as the organization concerned.
	Pool *pgxpool.Pool
	// Owner is the workers': the relay and the posts work through it, for
	// every organization.
	Owner   *pgxpool.Pool
	Tokens  TokenSource
	Metrics *telemetry.Metrics
	Logger  *slog.Logger
	// Audit records each change of the settings in its transaction; nil
	// records nothing.
	Audit audit.Recorder
	// Approvals routes each request to its approver group's channel and
	// counts its approvals (internal/domain/approvers); nil: every
	// request goes to the organization's channel, one approval decides.
	Approvals Approvals
	// Fair counts each organization's messages: those of one past its
	// fair rate queue behind every other organization's. nil: none do.
	Fair *fairness.Meter
}

// Approvals is what Slack needs of the approval policies.
type Approvals interface {
	ProgressOf(ctx context.Context, db dbutil.DB, inv *invocation.Invocation) (*approvers.Progress, error)
	ChannelOrganizations(ctx context.Context, db dbutil.DB) ([]string, error)
}

// Service posts and updates approval messages and takes the clicks.
type Service struct {
	deps   Deps
	cfg    Config
	logger *slog.Logger
	api    *slackapprovalstore.Store // the settings and the clicks, on Pool
	work   *slackapprovalstore.Store // the relay and the posts, on Owner
	store  *invocationstore.Store
	client *http.Client
}

// New returns a Service.
func New(deps *Deps, cfg *Config) (*Service, error) {
	c := *cfg
	c.RelayInterval = cmp.Or(c.RelayInterval, time.Second)
	if deps.Metrics == nil {
		deps.Metrics = telemetry.NewNop()
	}
	return &Service{deps: *deps, cfg: c, logger: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)),
		api: slackapprovalstore.New(deps.Pool), work: slackapprovalstore.New(deps.Owner), store: invocationstore.New(nil), client: netguard.Client(c.AllowPrivateNetworks, 10*time.Second)}, nil
}

// Approver is who a Slack user approves as. Its JSON is how the approvers
// are stored (jsonb, by Slack user id); the API has its own shape.
type Approver struct {
	UserID string `json:"user_id"`
	Role   string `json:"role"`
}

// Settings are an organization's Slack approval settings.
type Settings struct {
	// Channel overrides Config.Channel when set.
	Channel   *string
	Approvers map[string]Approver
}

// Get returns the organization's settings (empty when none were stored).
func (s *Service) Get(ctx context.Context, org string) (Settings, error) {
	return settingsOf(ctx, s.api, s.deps.Pool, org)
}

// ETag is the entity tag of an organization's settings, as Get returns
// them: PutChannel and PutApprovers refuse an If-Match that names another
// (errs.PreconditionFailed).
func ETag(st Settings) string { return etag.Of(settingsJSON(st)) }

// settingsRecord is an organization's settings as the audit trail records
// them.
type settingsRecord struct {
	Channel   *string             `json:"channel"`
	Approvers map[string]Approver `json:"approvers"`
}

func settingsJSON(st Settings) any { return settingsRecord(st) }

// settingsOf reads org's settings through store on db.
func settingsOf(ctx context.Context, store *slackapprovalstore.Store, db dbutil.DB, org string) (Settings, error) {
	r, ok, err := store.SettingsIn(ctx, db, org)
	if err != nil {
		return Settings{}, fmt.Errorf("loading slack settings: %w", err)
	}
	if !ok {
		return Settings{Approvers: map[string]Approver{}}, nil
	}
	st := Settings{Channel: r.Channel, Approvers: map[string]Approver{}}
	if err := json.Unmarshal(r.Approvers, &st.Approvers); err != nil {
		return Settings{}, fmt.Errorf("decoding approvers: %w", err)
	}
	return st, nil
}

// PutChannel sets (or, with nil, clears) the organization's channel. A
// non-empty ifMatch must name the current settings' ETag.
func (s *Service) PutChannel(ctx context.Context, org, by string, channel *string, ifMatch string) (Settings, error) {
	if channel != nil && (*channel == "" || len(*channel) > 255) {
		return Settings{}, errs.Invalid("channel", "channel must be a Slack channel id or name of 1 to 255 bytes, or null")
	}
	st, err := s.change(ctx, org, by, ifMatch, "slack_settings.set_channel", func(ctx context.Context, tx pgx.Tx) error {
		return s.api.PutChannel(ctx, tx, org, by, channel)
	})
	if err != nil {
		return Settings{}, fmt.Errorf("storing slack channel: %w", err)
	}
	return st, nil
}

// change runs one change of org's settings under their lock: it reads
// them, checks ifMatch, writes, reads them again and records the change as
// action, all in one transaction; by is its actor when the context names
// none (audit.Internal).
func (s *Service) change(ctx context.Context, org, by, ifMatch, action string, write func(ctx context.Context, tx pgx.Tx) error) (Settings, error) {
	var after Settings
	err := s.api.Locked(ctx, org, func(ctx context.Context, tx pgx.Tx) error {
		before, err := settingsOf(ctx, s.api, tx, org)
		if err != nil {
			return err
		}
		if current := ETag(before); !etag.Matches(ifMatch, current) {
			return errs.Errorf(errs.PreconditionFailed, "the Slack settings changed since they were read: If-Match %s, current ETag %s; read them again and reapply the change", ifMatch, current)
		}
		after, err = s.write(ctx, tx, org, by, action, before, write)
		return err
	})
	return after, err
}

// write runs a change of org's settings, read as before, in tx holding
// their lock: it writes, reads them again and records the change as
// action.
func (s *Service) write(ctx context.Context, tx pgx.Tx, org, by, action string, before Settings, write func(ctx context.Context, tx pgx.Tx) error) (Settings, error) {
	if err := write(ctx, tx); err != nil {
		return Settings{}, err
	}
	after, err := settingsOf(ctx, s.api, tx, org)
	if err != nil || s.deps.Audit == nil {
		return after, err
	}
	return after, s.deps.Audit.RecordTx(ctx, tx, &audit.Change{Org: org, Actor: audit.Internal(ctx, by), Action: action, TargetType: "slack_settings",
		Before: settingsJSON(before), After: settingsJSON(after)})
}

// Offboard removes the approvers mapped to subject, a person whose tokens
// are revoked by subject, in tx (the revocation's; revocation.People): a
// click is no token's, so the revocation alone would not stop their
// approvals from Slack. The change is recorded as a replacement of the
// approvers, by by; with none mapped to subject nothing is written.
func (s *Service) Offboard(ctx context.Context, tx pgx.Tx, org, subject, by string) error {
	if err := s.api.Lock(ctx, tx, org); err != nil {
		return err
	}
	before, err := settingsOf(ctx, s.api, tx, org)
	if err != nil {
		return err
	}
	kept := maps.Clone(before.Approvers)
	maps.DeleteFunc(kept, func(_ string, a Approver) bool { return a.UserID == subject })
	if len(kept) == len(before.Approvers) {
		return nil
	}
	raw, _ := json.Marshal(kept)
	_, err = s.write(ctx, tx, org, by, "slack_settings.replace_approvers", before, func(ctx context.Context, tx pgx.Tx) error {
		return s.api.PutApprovers(ctx, tx, org, by, raw)
	})
	return err
}

// PutApprovers replaces the organization's approvers. Only admins and
// owners approve, so those are the only roles. A non-empty ifMatch must
// name the current settings' ETag.
func (s *Service) PutApprovers(ctx context.Context, org, by string, approvers map[string]Approver, ifMatch string) (Settings, error) {
	for id, a := range approvers {
		if id == "" || len(id) > 255 {
			return Settings{}, errs.Invalid("approvers", "a Slack user id must be 1 to 255 bytes")
		}
		if a.UserID == "" || len(a.UserID) > 255 {
			return Settings{}, errs.Invalid(id+".user_id", "%s.user_id must be 1 to 255 bytes", id)
		}
		if a.Role != "admin" && a.Role != "owner" {
			return Settings{}, errs.Invalid(id+".role", "%s.role must be admin or owner", id)
		}
	}
	raw, _ := json.Marshal(approvers)
	st, err := s.change(ctx, org, by, ifMatch, "slack_settings.replace_approvers", func(ctx context.Context, tx pgx.Tx) error {
		return s.api.PutApprovers(ctx, tx, org, by, raw)
	})
	if err != nil {
		return Settings{}, fmt.Errorf("storing approvers: %w", err)
	}
	return st, nil
}

// call posts to a Slack Web API method with the organization's token.
func (s *Service) call(ctx context.Context, org, method string, body any) (map[string]any, error) {
	tok, err := s.deps.Tokens.Token(ctx, credential.Request{Org: org, Integration: "slack"}, false)
	if err != nil {
		return nil, fmt.Errorf("slack token: %w", err)
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.BaseURL+"/"+method, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+tok.Value)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slack %s: %w", method, err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, fmt.Errorf("slack %s: HTTP %d, undecodable answer", method, resp.StatusCode)
	}
	if ok, _ := answer["ok"].(bool); !ok {
		return nil, fmt.Errorf("slack %s: %v", method, answer["error"])
	}
	return answer, nil
}

func (s *Service) count(kind string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	s.deps.Metrics.SlackNotifications.WithLabelValues(kind, outcome).Inc()
}
