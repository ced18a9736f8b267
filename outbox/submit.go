package outbox

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/batch"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/outbox/outboxstore"
	"github.com/outboxd/outboxd/policy"
)

const (
	originInvoke   = "invoke"
	originEnvelope = "envelope"
	// OriginMCP is the origin of an invoke over the MCP front door.
	OriginMCP = "mcp"
)

// request is what invoke and envelopes have in common on their way to one
// transaction.
type request struct {
	// id is the id the invocation gets: a Watch's, or a new one.
	id                                                        uuid.UUID
	org, sessionID, automationID, userID, requestedBy, origin string
	source, action                                            string
	params                                                    json.RawMessage
	sources                                                   auth.SourceClaim
	idempotencyKey, externalID                                string
	riskHint                                                  string
	approvalRequired                                          bool
	rateBucket                                                string
	mustRunBefore                                             *time.Time
	retry                                                     invocation.Retry // the envelope's override
	// traceContext is the traceparent of the request's enqueue span, or
	// "" untraced.
	traceContext string
	// token is the token that asks, nil for none.
	token *invocation.Token
}

// submit runs the pipeline shared by invoke and envelopes: resolve and
// validate, de-duplicate, resolve the mode, then record the invocation and
// its job in one transaction. created is false when an earlier request with
// the same idempotency key or external id is returned instead.
//
// The requests of an organization that arrive together share that
// transaction (a group commit: one lookup, one bulk insert, one commit for
// all of them; a request that finds no group running goes alone at once).
// An invoke counts against its session's rate and pending cap in it; a
// refusal fails the group, whose requests are then recorded one by one
// (batch.Isolated), so the refused one alone is refused and its count
// rolled back.
func (s *Service) submit(ctx context.Context, r *request) (inv invocation.Invocation, created bool, err error) {
	ctx, span := s.tracer.Start(ctx, "outboxd.enqueue")
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrOrganizationID.String(r.org), tracing.AttrSourceID.String(r.source),
			tracing.AttrActionID.String(r.action), tracing.AttrOrigin.String(r.origin))
		defer func() { endEnqueue(span, inv, err) }()
	}
	p, err := s.prepare(ctx, r, s.resolveAction)
	if err != nil {
		return inv, false, err
	}
	recorded, err := s.group(r.org).Do(ctx, p)
	if revoked := (*invocation.RevokedError)(nil); errors.As(err, &revoked) && recorded != nil {
		// Recorded, and withdrawn there: its token is revoked.
		s.created(ctx, *recorded)
		return *recorded, true, err
	}
	if err != nil {
		return inv, false, err
	}
	if recorded == nil {
		// An earlier request, or a concurrent one, has the key.
		existing, _, err := s.existing(ctx, s.deps.Pool, r, p.hash)
		return existing, false, err
	}
	s.created(ctx, *recorded)
	return *recorded, true, nil
}

// endEnqueue records on an enqueue's span what came of it.
func endEnqueue(span trace.Span, inv invocation.Invocation, err error) {
	if err != nil {
		tracing.Fail(span, errorCode(err))
		return
	}
	span.SetAttributes(tracing.AttrInvocationID.String(inv.ID.String()), tracing.AttrMode.String(inv.Mode),
		tracing.AttrStatus.String(string(inv.Status)))
}

// write records prepared requests of one organization in a transaction of
// their own, whose statements are planned once per connection
// (dbutil.Keyed): the read before the writes cost twice its own work in
// planning when planned for each group.
func (s *Service) write(ctx context.Context, ps []*prepared) ([]batch.Result[*invocation.Invocation], error) {
	return dbutil.WithTxV(ctx, dbutil.Keyed{Pool: s.deps.Pool}, func(ctx context.Context, tx pgx.Tx) ([]batch.Result[*invocation.Invocation], error) {
		return s.record(ctx, tx, ps)
	})
}

// record writes prepared requests of one organization in tx: one read for
// their repeats and mode overrides (a deny override committed before the
// read is always seen), then, for an invoke, its session's rate and
// pending cap, then the invocations and their jobs. A request whose key an
// earlier or concurrent one holds is nil in the answer. One whose token a
// revocation refuses is recorded and withdrawn (invocationstore's Record):
// its answer is the withdrawn invocation with an invocation.RevokedError.
//
// Groups of other API processes lock the same rows, so the locks are taken
// in one order: every session's rate row first (one statement takes them
// in the order of the sessions' ids), then each request's grant and
// pending cap, sessions in the order of their ids. Two groups can then only
// deadlock on two grants used in opposite orders; Postgres breaks that,
// and the group is done again one request at a time.
func (s *Service) record(ctx context.Context, tx pgx.Tx, ps []*prepared) ([]batch.Result[*invocation.Invocation], error) {
	look := make([]outboxstore.Request, len(ps))
	for i, p := range ps {
		look[i] = outboxstore.Request{
			IdempotencyKey: p.r.idempotencyKey, SessionID: p.r.sessionID, ExternalID: p.r.externalID,
			AutomationID: p.r.automationID, SourceID: p.r.source, ActionID: p.r.action,
		}
	}
	found, err := s.queries.Lookup(ctx, tx, ps[0].r.org, look)
	if err != nil {
		return nil, fmt.Errorf("looking up the requests: %w", err)
	}
	var (
		creates []*invocation.CreateParams
		owners  []int // request of each create
		// pending counts the pending invocations of each session this
		// group creates, which the sessions' counts do not see yet.
		pending = map[string]int{}
	)
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ps[a].r.sessionID, ps[b].r.sessionID) })
	var invokes []string // the session of each new invoke
	for i, p := range ps {
		if !found[i].Repeat && p.r.origin != originEnvelope {
			invokes = append(invokes, p.r.sessionID)
		}
	}
	if err := s.hitInvokeRate(ctx, tx, ps[0].r.org, invokes); err != nil {
		return nil, err
	}
	for _, i := range order {
		f := found[i]
		if f.Repeat {
			continue
		}
		r := ps[i].r
		create := s.plan(ps[i], f.OrgMode, f.AutomationMode)
		if err := s.useGrant(ctx, tx, ps[i], create); err != nil {
			return nil, err
		}
		if err := s.seal(ctx, tx, ps[i], create); err != nil {
			return nil, err
		}
		if create.Status != invocation.StatusDenied {
			create.Behind = s.behind(r.org)
		}

		if create.Status == invocation.StatusPending && r.sessionID != "" {
			if err := s.checkPendingCap(ctx, tx, r.org, r.sessionID, pending[r.sessionID]); err != nil {
				return nil, err
			}
			pending[r.sessionID]++
		}
		creates = append(creates, create)
		owners = append(owners, i)
	}
	out := make([]batch.Result[*invocation.Invocation], len(ps))
	if len(creates) == 0 {
		return out, nil
	}
	created, refused, err := s.store.Record(ctx, tx, creates)
	if err != nil {
		return nil, err
	}
	for k, inv := range created {
		out[owners[k]].Value = inv
		if refused[k] != nil {
			out[owners[k]].Err = &invocation.RevokedError{Invocation: inv.ID, Refusal: *refused[k]}
		}
		if inv == nil && creates[k].GrantID != nil {
			if err := s.grants.GiveBack(ctx, tx, creates[k].OrganizationID, *creates[k].GrantID); err != nil {
				return nil, fmt.Errorf("giving back a grant's use: %w", err)
			}
		}
	}
	return out, nil
}

// group returns the group commit of an organization's requests. A failed
// transaction is retried one request at a time, so one request's error
// (a refusal, a deadlock) is never its neighbours'.
func (s *Service) group(org string) *batch.Group[*prepared, *invocation.Invocation] {
	if g, ok := s.groups.Load(org); ok {
		return g.(*batch.Group[*prepared, *invocation.Invocation])
	}
	g, _ := s.groups.LoadOrStore(org, &batch.Group[*prepared, *invocation.Invocation]{
		Max: MaxBatch,
		Run: batch.Isolated(s.write),
	})
	return g.(*batch.Group[*prepared, *invocation.Invocation])
}

// prepared is a request whose action is resolved and whose params are
// valid.
type prepared struct {
	r      *request
	action catalog.Action
	hash   string
}

type actionResolver func(ctx context.Context, org, sourceID, actionID string) (catalog.Action, error)

// prepare checks the token may use the source, resolves the action and
// validates the params against its schema.
func (s *Service) prepare(ctx context.Context, r *request, resolve actionResolver) (*prepared, error) {
	if !r.sources.Allows(r.source) {
		return nil, fmt.Errorf("%w: %s", errs.SourceNotAllowed, r.source)
	}
	action, err := resolve(ctx, r.org, r.source, r.action)
	if err != nil {
		return nil, err
	}
	if reason := action.Source.Disabled; reason != "" {
		return nil, fmt.Errorf("%w: %s.%s cannot be invoked: %s", errs.SourceDisabled, r.source, r.action, reason)
	}
	def := action.Definition
	if len(r.params) == 0 {
		r.params = json.RawMessage(`{}`)
	}
	fieldErrs, err := s.validator.Validate(def.Params, r.params)
	if err != nil {
		return nil, fmt.Errorf("validating params of %s.%s: %w", r.source, r.action, err)
	}
	if len(fieldErrs) > 0 {
		return nil, &errs.ValidationError{Message: "invalid params for " + r.source + "." + r.action, Fields: fieldErrs}
	}
	hash, err := requestHash(r)
	if err != nil {
		return nil, errs.Invalid("params", "params are not valid JSON")
	}
	r.traceContext = tracing.Traceparent(ctx)
	return &prepared{r: r, action: action, hash: hash}, nil
}

// plan resolves the mode of a prepared request from the overrides that
// apply to it and returns the invocation to create: denied, approved (its
// job runs now) or pending (its job waits for a human until the window
// closes).
func (s *Service) plan(p *prepared, orgMode, automationMode string) *invocation.CreateParams {
	r := p.r
	if r.automationID == "" {
		automationMode = ""
	}
	res, drifted := p.action.Resolve(policy.ModeInput{
		AutomationOverride: automationMode,
		OrgDefault:         orgMode,
		RequestRisk:        r.riskHint,
		RequireApproval:    r.approvalRequired,
	})
	if drifted {
		s.deps.Metrics.Drift.WithLabelValues(r.source).Inc()
		s.logger.Warn("connector tool drifted since its review", "source_id", r.source, "action_id", r.action, "mode", res.Mode)
	}
	bucket := r.rateBucket
	if bucket == "" {
		if b := p.action.Source.Bucket; b != "" && s.deps.Flow.Accepts(b) {
			bucket = b
		}
	}
	params := policy.Redact(r.params)
	create := &invocation.CreateParams{
		ID:             r.id,
		OrganizationID: r.org,
		SessionID:      r.sessionID,
		AutomationID:   r.automationID,
		UserID:         r.userID,
		RequestedBy:    r.requestedBy,
		Origin:         r.origin,
		Integration:    r.source,
		Action:         r.action,
		RiskLevel:      string(policy.TierOf(string(p.action.Definition.Tier))),
		Mode:           string(res.Mode),
		ModeSource:     string(res.Source),
		Params:         params,
		ParamsHash:     p.hash,
		ExternalID:     r.externalID,
		IdempotencyKey: r.idempotencyKey,
		RateBucket:     bucket,
		MustRunBefore:  r.mustRunBefore,
		Approval:       "auto",
		RiskHint:       r.riskHint,
		TraceContext:   r.traceContext,
		Token:          r.token,
	}
	if r.approvalRequired {
		create.Approval = "required"
	}
	if spec := s.cfg.RetryBySource[r.source].Merge(r.retry); spec != (invocation.Retry{}) {
		create.Retry = &spec
	}
	switch res.Mode {
	case policy.ModeDeny:
		create.Status = invocation.StatusDenied
		create.DeniedReason = cmp.Or(res.DeniedReason, "policy")
		return create
	case policy.ModeAllow:
		create.Status = invocation.StatusApproved
	default:
		create.Status = invocation.StatusPending
		// An approval after must_run_before would only be skipped: the
		// window closes at the deadline when that comes first.
		expires := time.Now().Add(s.ttl(r.automationID))
		if r.mustRunBefore != nil && r.mustRunBefore.Before(expires) {
			expires = *r.mustRunBefore
		}
		create.ExpiresAt = &expires
	}
	if redacted(r.params, params) {
		// The provider must get the exact params: keep them sealed for the
		// worker, bound to this invocation.
		create.ParamsSealed = s.deps.Box.Seal(r.params, create.ID[:])
	}
	return create
}

// behind counts a new invocation of org against its fair rate and says
// whether its jobs queue behind other organizations' (package fairness);
// the log says so once a minute at most for each organization.
func (s *Service) behind(org string) bool {
	behind, tell := s.fair.Behind(org, time.Now())
	if behind {
		s.deps.Metrics.Behind.Inc()
	}
	if tell {
		s.logger.Warn("organization asking faster than its fair rate: its new jobs queue behind other organizations'",
			"organization_id", org, "org_fair_rate", s.cfg.FairRate, "org_fair_burst", s.cfg.FairBurst)
	}
	return behind
}

// created counts and logs a new invocation.
func (s *Service) created(ctx context.Context, inv invocation.Invocation) {
	s.deps.Metrics.InvocationStatus(inv.Mode, string(inv.Status))
	s.logger.InfoContext(ctx, "invocation created", "invocation_id", inv.ID, "organization_id", inv.OrganizationID,
		"session_id", deref(inv.SessionID), "source_id", inv.Integration, "action_id", inv.Action,
		"mode", inv.Mode, "mode_source", inv.ModeSource, "status", inv.Status)
}

// resolveAction finds an action, with its source, for org.
func (s *Service) resolveAction(ctx context.Context, org, sourceID, actionID string) (catalog.Action, error) {
	src, err := s.deps.Sources.Source(ctx, org, sourceID)
	if errors.Is(err, errs.NotFound) {
		return catalog.Action{}, fmt.Errorf("%w: integration %s", errs.NotFound, sourceID)
	}
	if err != nil {
		return catalog.Action{}, err
	}
	defs, err := src.ListActions(ctx, executors.ExecContext{OrganizationID: org})
	if err != nil {
		return catalog.Action{}, fmt.Errorf("%w: listing the actions of %s: %s", errs.SourceUnavailable, sourceID, err)
	}
	for _, d := range defs {
		if d.ID == actionID {
			return catalog.Action{Source: src, Definition: d}, nil
		}
	}
	return catalog.Action{}, fmt.Errorf("%w: action %s.%s", errs.NotFound, sourceID, actionID)
}

// existing returns the invocation an earlier request with the same
// idempotency key or external id created. ok is false when there is none.
func (s *Service) existing(ctx context.Context, db invocationstore.DB, r *request, hash string) (invocation.Invocation, bool, error) {
	inv, ok, err := s.store.GetByKey(ctx, db, r.org, r.sessionID, r.idempotencyKey, r.externalID)
	if !ok || err != nil {
		return inv, ok, err
	}
	return inv, true, sameRequest(inv, &prepared{r: r, hash: hash})
}

// sameRequest is errs.IdempotencyMismatch when inv, which holds p's key, was
// created by a request with other content, from another session or, for
// an external id (unique in the organization), by another automation
// (without one, by another token subject): a repeat answers the invocation
// only to whom may read it, as GET /v1/envelopes/{id} does.
func sameRequest(inv invocation.Invocation, p *prepared) error {
	if !sameContent(inv.ParamsHash, p) || deref(inv.SessionID) != p.r.sessionID {
		return errs.IdempotencyMismatch
	}
	if p.r.externalID != "" {
		other := deref(inv.AutomationID) != p.r.automationID
		if p.r.automationID == "" {
			other = other || inv.RequestedBy != p.r.requestedBy
		}
		if other {
			return errs.IdempotencyMismatch
		}
	}
	return nil
}

// checkPendingCap takes a per-session transaction lock, so concurrent
// requests count pending invocations one after the other; planned are the
// session's pending invocations this transaction is about to create.
func (s *Service) checkPendingCap(ctx context.Context, tx pgx.Tx, org, sessionID string, planned int) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "pending/"+org+"/"+sessionID); err != nil {
		return fmt.Errorf("locking session: %w", err)
	}
	n, err := s.store.CountPending(ctx, tx, org, sessionID)
	if err != nil {
		return fmt.Errorf("counting pending invocations: %w", err)
	}
	if n += int64(planned); n >= int64(s.cfg.PendingPerSession) {
		return fmt.Errorf("%w: %d pending invocations in session %s", errs.PendingLimit, n, sessionID)
	}
	return nil
}

// hitInvokeRate counts, in one statement, an invoke for each of
// sessionIDs in its session's current minute window, in a table every API
// process shares. A session over its rate fails the group, which rolls its
// counts back with its transaction and is then done one request at a time.
func (s *Service) hitInvokeRate(ctx context.Context, tx pgx.Tx, org string, sessionIDs []string) error {
	if len(sessionIDs) == 0 {
		return nil
	}
	now := time.Now()
	window := now.Truncate(time.Minute)
	counts, err := s.queries.InvokeRateHit(ctx, tx, org, sessionIDs, window)
	if err != nil {
		return fmt.Errorf("counting invoke rate: %w", err)
	}
	for _, n := range counts {
		if n > s.cfg.InvokesPerMinute {
			return &errs.RateLimitError{Limit: s.cfg.InvokesPerMinute, RetryAfter: window.Add(time.Minute).Sub(now)}
		}
	}
	return nil
}

func (s *Service) ttl(automationID string) time.Duration {
	if automationID != "" {
		return s.cfg.UnattendedTTL
	}
	return s.cfg.InteractiveTTL
}

// hashVersion begins the hashes requestHash makes. A stored hash without
// it was made by a release that hashed the tool and params alone
// (legacyHash): a retry of such a request after an upgrade still matches.
const hashVersion = "v2:"

// requestHash identifies a request's content, to tell a retry of the same
// request from a reused key: its tool and params, and what it asks of its
// execution (risk, approval, rate bucket, deadline, retry policy), since a
// repeat that asked for an approval the first did not must not be answered
// with the first.
func requestHash(r *request) (string, error) {
	h, err := contentHash(r)
	if err != nil {
		return "", err
	}
	var deadline string
	if r.mustRunBefore != nil {
		deadline = r.mustRunBefore.UTC().Format(time.RFC3339Nano)
	}
	// Each term is validated (a known risk and bucket, a time): none holds
	// the separator.
	fmt.Fprintf(h, "\x00risk=%s\x00approval=%t\x00rate_bucket=%s\x00must_run_before=%s\x00retry=%d,%d,%d",
		r.riskHint, r.approvalRequired, r.rateBucket, deadline, r.retry.MaxAttempts, r.retry.BaseDelay, r.retry.MaxDelay)
	return hashVersion + hex.EncodeToString(h.Sum(nil)), nil
}

// legacyHash is requestHash as releases before hashVersion made it.
func legacyHash(r *request) (string, error) {
	h, err := contentHash(r)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// contentHash is a hash of a request's tool and canonical params.
func contentHash(r *request) (hash.Hash, error) {
	canonical, err := policy.CanonicalJSON(r.params)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", r.source, r.action)
	h.Write(canonical)
	return h, nil
}

// sameContent reports whether stored, the hash of the invocation holding
// p's key, is p's: in the form stored was made.
func sameContent(stored string, p *prepared) bool {
	if strings.HasPrefix(stored, hashVersion) {
		return stored == p.hash
	}
	legacy, err := legacyHash(p.r)
	return err == nil && stored == legacy
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// redacted reports whether redaction changed params.
func redacted(original, redacted json.RawMessage) bool {
	var compact bytes.Buffer
	if err := json.Compact(&compact, original); err != nil {
		return true
	}
	return !bytes.Equal(compact.Bytes(), redacted)
}

// errorCode is err's code for a span: its kind's API code, never its text.
func errorCode(err error) string {
	var (
		invalid *errs.ValidationError
		limited *errs.RateLimitError
	)
	switch {
	case errs.KindOf(err) != nil:
		return errs.KindOf(err).Code
	case errors.As(err, &invalid):
		return "invalid"
	case errors.As(err, &limited):
		return "rate_limited"
	case errors.Is(err, auth.ErrTokenRevoked):
		return "token_revoked"
	}
	return "internal"
}
