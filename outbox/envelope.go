package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/jsontext"
	"github.com/outboxd/outboxd/policy"
)

// Envelope is the Universal Action Envelope an automation enqueues.
type Envelope struct {
	ExternalID string
	// AutomationID may only repeat the token's automation; empty for none.
	AutomationID string
	Tool         EnvelopeTool
	Args         json.RawMessage
	// Risk is an optional hint (low|medium|high, read|write|danger, R0–R4);
	// it can only tighten the resolved mode.
	Risk string
	// Approval is "auto" (the cascade decides) or "required" (always ask a
	// human). Default auto.
	Approval    string
	Constraints EnvelopeConstraints
}

// EnvelopeTool names the action, either as source and action or as
// name "<source>.<action>".
type EnvelopeTool struct {
	Name   string
	Source string
	Action string
}

// EnvelopeConstraints are the envelope's execution constraints; zero
// values are none.
type EnvelopeConstraints struct {
	RateBucket    string
	MustRunBefore *time.Time
	Retry         *EnvelopeRetry
}

// EnvelopeRetry overrides the source's retry policy for one envelope.
// Delays are durations such as "2s"; zero values keep the source's.
type EnvelopeRetry struct {
	MaxAttempts int
	BaseDelay   string
	MaxDelay    string
}

func (r *EnvelopeRetry) parse() (invocation.Retry, error) {
	var out invocation.Retry
	if r == nil {
		return out, nil
	}
	if r.MaxAttempts < 0 || r.MaxAttempts > 25 {
		return out, errs.Invalid("constraints.retry.max_attempts", "max_attempts must be between 1 and 25")
	}
	out.MaxAttempts = r.MaxAttempts
	for _, d := range []struct {
		field, raw string
		dst        *time.Duration
	}{{"base_delay", r.BaseDelay, &out.BaseDelay}, {"max_delay", r.MaxDelay, &out.MaxDelay}} {
		if d.raw == "" {
			continue
		}
		v, err := time.ParseDuration(d.raw)
		if err != nil || v < 100*time.Millisecond || v > 24*time.Hour {
			return out, errs.Invalid("constraints.retry."+d.field, "%s must be a duration between 100ms and 24h, such as 2s or 5m", d.field)
		}
		*d.dst = v
	}
	if out.BaseDelay > 0 && out.MaxDelay > 0 && out.MaxDelay < out.BaseDelay {
		return out, errs.Invalid("constraints.retry.max_delay", "max_delay must not be below base_delay")
	}
	return out, nil
}

// Enqueuer is who enqueues envelopes: the claims of a service token.
type Enqueuer struct {
	OrganizationID string
	RequestedBy    string
	// AutomationID is the token's automation. The envelope's own
	// automation_id may only repeat it: a body never grants what the token
	// does not carry.
	AutomationID string
	// UserID is the human the automation acts for, if any.
	UserID string
	// Sources is the token's sources claim: absent, any source; present,
	// only those it lists.
	Sources auth.SourceClaim
	// Token is the verified token that enqueues, nil for none (as
	// InvokeParams.Token).
	Token *auth.Claims
}

// EnqueueParams is one envelope and who enqueues it.
type EnqueueParams struct {
	Enqueuer
	Envelope Envelope
	// Watch, when set, is the caller's subscription to the invocation's
	// end (Service.Watch): the invocation is created with its ID.
	Watch *Watch
}

// Enqueue records an envelope's invocation and job. created is false when an
// envelope with the same external id already existed; it is returned as is.
func (s *Service) Enqueue(ctx context.Context, p *EnqueueParams) (inv invocation.Invocation, created bool, err error) {
	r, err := s.envelopeRequest(ctx, &p.Enqueuer, &p.Envelope)
	if err != nil {
		return inv, false, err
	}
	if p.Watch != nil {
		r.id = p.Watch.ID
	}
	return s.submit(ctx, r)
}

// envelopeRequest checks an envelope's own fields and turns it into a
// pipeline request.
func (s *Service) envelopeRequest(ctx context.Context, by *Enqueuer, env *Envelope) (*request, error) {
	if env.ExternalID == "" {
		return nil, errs.Invalid("external_id", "external_id is required")
	}
	if strings.TrimSpace(env.ExternalID) == "" {
		return nil, errs.Invalid("external_id", "external_id must not be blank")
	}
	if problem := jsontext.IdentifierProblem(env.ExternalID); problem != "" {
		return nil, errs.Invalid("external_id", "external_id %s", problem)
	}
	if utf8.RuneCountInString(env.ExternalID) > 255 {
		return nil, errs.Invalid("external_id", "external_id must be at most 255 characters")
	}
	source, action := env.Tool.Source, env.Tool.Action
	if env.Tool.Name != "" {
		if source != "" || action != "" {
			return nil, errs.Invalid("tool", "give either tool.name or tool.source and tool.action, not both")
		}
		i := strings.LastIndex(env.Tool.Name, ".")
		if i <= 0 || i == len(env.Tool.Name)-1 {
			return nil, errs.Invalid("tool.name", "tool.name must be <source>.<action>")
		}
		source, action = env.Tool.Name[:i], env.Tool.Name[i+1:]
	}
	if source == "" || action == "" {
		return nil, errs.Invalid("tool", "tool.source and tool.action are required")
	}
	if env.Risk != "" && !policy.ValidRisk(env.Risk) {
		return nil, errs.Invalid("risk", "risk must be one of low, medium, high, read, write, danger, R0–R4")
	}
	var approvalRequired bool
	switch env.Approval {
	case "", "auto":
	case "required":
		approvalRequired = true
	default:
		return nil, errs.Invalid("approval", "approval must be auto or required")
	}
	if b := env.Constraints.RateBucket; b != "" && !s.deps.Flow.Accepts(b) {
		return nil, errs.Invalid("constraints.rate_bucket", "unknown rate bucket %q", b)
	}
	if err := s.sharedBucket(ctx, by.OrganizationID, source, env.Constraints.RateBucket); err != nil {
		return nil, err
	}
	retry, err := env.Constraints.Retry.parse()
	if err != nil {
		return nil, err
	}
	mustRunBefore := env.Constraints.MustRunBefore
	if mustRunBefore != nil {
		// RFC 3339 allows years 0000–9999 in any offset, but Postgres has no
		// year 0 and JSON no year 10000: out of that range in UTC, the
		// deadline could not be stored, or once stored not answered.
		utc := mustRunBefore.UTC()
		if y := utc.Year(); y < 1 || y > 9999 {
			return nil, errs.Invalid("constraints.must_run_before", "must_run_before must be between years 0001 and 9999 in UTC")
		}
		mustRunBefore = &utc
	}
	if env.AutomationID != "" && env.AutomationID != by.AutomationID {
		return nil, fmt.Errorf("%w: the envelope names automation %q and the token carries %q", errs.AutomationNotAllowed, env.AutomationID, by.AutomationID)
	}
	return &request{
		id:               uuid.Must(uuid.NewV7()),
		org:              by.OrganizationID,
		automationID:     by.AutomationID,
		userID:           by.UserID,
		requestedBy:      by.RequestedBy,
		sources:          by.Sources,
		token:            invocation.TokenOf(by.Token),
		origin:           originEnvelope,
		source:           source,
		action:           action,
		params:           env.Args,
		externalID:       env.ExternalID,
		riskHint:         env.Risk,
		approvalRequired: approvalRequired,
		rateBucket:       env.Constraints.RateBucket,
		mustRunBefore:    mustRunBefore,
		retry:            retry,
	}, nil
}

// sharedBucket refuses an envelope of org for source that names another
// source's global rate bucket (such as plugin, shared by every
// organization's plugin calls): its calls would take that bucket's tokens
// and concurrency slots, and one organization could hold back every
// organization's calls of that source. A global bucket no source takes
// by default (an operator's) stays nameable, as do the source's own and
// the buckets kept per organization or per source. A kind's bucket
// (connector, database: catalog.Kind's Bucket), made global by an
// operator, is its sources' even for an organization that has none.
func (s *Service) sharedBucket(ctx context.Context, org, source, bucket string) error {
	if bucket == "" || s.deps.Flow == nil || s.deps.Sources == nil {
		return nil
	}
	if cfg, ok := s.deps.Flow.Bucket(bucket); !ok || cfg.Scope != flow.ScopeGlobal {
		return nil
	}
	if prefix, ok := s.deps.Sources.KindOfBucket(bucket); ok {
		// Every source of the kind takes it, whether or not org has one.
		if strings.HasPrefix(source, prefix) {
			return nil
		}
		return othersBucket(bucket, "every "+prefix+"… source", source)
	}
	// Only an envelope naming a global bucket gets here, which is rare:
	// the sources' default buckets are looked up then, among the sources
	// org sees.
	sources, err := s.deps.Sources.List(dbutil.WithOrg(ctx, org), org)
	if err != nil {
		return fmt.Errorf("listing sources for constraints.rate_bucket: %w", err)
	}
	var owners []string
	for _, src := range sources {
		if src.Bucket != bucket {
			continue
		}
		if src.ID() == source {
			return nil
		}
		owners = append(owners, src.ID())
	}
	if len(owners) == 0 {
		return nil
	}
	return othersBucket(bucket, strings.Join(owners, ", "), source)
}

// othersBucket refuses an envelope of source naming owners' global bucket.
func othersBucket(bucket, owners, source string) error {
	return errs.Invalid("constraints.rate_bucket",
		"rate bucket %q is the bucket of %s, shared by every organization: an envelope of %s may not name it; name a bucket of your own organization or none",
		bucket, owners, source)
}

// GetEnvelope returns an envelope's invocation by its action id, of a
// source sources allows; any other invocation is not found (NotFound).
func (s *Service) GetEnvelope(ctx context.Context, org string, id string, sources auth.SourceClaim) (invocation.Invocation, error) {
	inv, err := s.Get(ctx, org, id, sources)
	if err != nil {
		return inv, err
	}
	if inv.Origin != originEnvelope {
		return invocation.Invocation{}, NotFound(id)
	}
	return inv, nil
}
