// Package invocationstore reads invocations and makes their transitions
// (package invocation has the types and the state machine).
//
// Each transition is one statement run in the caller's transaction. It
// locks the row, changes it only when it is in a state the transition
// allows (a lost race changes nothing and returns errs.Conflict), and
// appends the invocation's next row to invocation_events: the activity
// timeline. A trigger on that table announces the events listeners wait
// for (a request for approval, a decision, an end) with pg_notify on
// invocation.EventsChannel in the same transaction, so a listener never
// hears of a change that rolled back and never misses one that committed.
//
// The store also inserts, releases and cancels the invocations' River
// jobs in the same transactions. The sqlc rows stay in this package; the
// API and the workers see invocation.Invocation and invocation.Event.
package invocationstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/fairness"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/batch"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/tracing"
)

// DB is a connection, pool or transaction to read with.
type DB = dbutil.DB

// Store reads invocations and makes their transitions.
type Store struct {
	river *river.Client[pgx.Tx]
	q     *dbsqlc.Queries
	// revoked finds the revocations refusing the tokens that ask for the
	// invocations recorded (NewRecording); nil: a token's cannot be
	// recorded.
	revoked Refusals
}

// New returns a Store that inserts, releases and cancels jobs with client.
// A nil client is taken from the context: inside a River worker. It
// records no invocation asked for by a token (NewRecording does).
func New(client *river.Client[pgx.Tx]) *Store {
	return &Store{river: client, q: dbsqlc.New()}
}

// NewRecording is New for a Store that also records the invocations
// tokens ask for (Record, CreateMany), withdrawing, as it records them,
// those whose token refusals finds revoked.
func NewRecording(client *river.Client[pgx.Tx], refusals Refusals) *Store {
	s := New(client)
	s.revoked = refusals
	return s
}

func (s *Store) jobs(ctx context.Context) (*river.Client[pgx.Tx], error) {
	if s.river != nil {
		return s.river, nil
	}
	return river.ClientFromContextSafely[pgx.Tx](ctx)
}

// Get returns an invocation of the organization.
func (s *Store) Get(ctx context.Context, db DB, org string, id uuid.UUID) (invocation.Invocation, error) {
	r, err := s.q.InvocationGet(ctx, db, dbsqlc.InvocationGetParams{ID: id, OrganizationID: org})
	return one(r, err, id)
}

// GetByID returns an invocation whatever its organization (for workers).
func (s *Store) GetByID(ctx context.Context, db DB, id uuid.UUID) (invocation.Invocation, error) {
	r, err := s.q.InvocationGetByID(ctx, db, id)
	return one(r, err, id)
}

// ByIDs returns the invocations with these ids that db may see, by id. It
// is planned for its ids on every run (dbutil.CustomPlans).
func (s *Store) ByIDs(ctx context.Context, db DB, ids []uuid.UUID) (map[uuid.UUID]invocation.Invocation, error) {
	rows, err := s.q.InvocationListByIDs(ctx, dbutil.CustomPlans{DBTX: db}, ids)
	if err != nil {
		return nil, fmt.Errorf("loading invocations: %w", err)
	}
	out := make(map[uuid.UUID]invocation.Invocation, len(rows))
	for _, r := range rows {
		out[r.ID] = fromRow(r)
	}
	return out, nil
}

// Lock returns an invocation of the organization, locked until tx ends.
func (s *Store) Lock(ctx context.Context, tx pgx.Tx, org string, id uuid.UUID) (invocation.Invocation, error) {
	r, err := s.q.InvocationGetForUpdate(ctx, tx, dbsqlc.InvocationGetForUpdateParams{ID: id, OrganizationID: org})
	return one(r, err, id)
}

// BeginMany is the first step of several jobs before their calls, in one
// statement. For each it returns the invocation with its RunContext and,
// when it is approved or executing and none of the gates can apply (no
// do-not-contact pattern, no quiet window, must_run_before not passed),
// marks it executing for its attempt, as Start does; Started is false when
// it did not (another state, or gates to check before Start). An
// invocation that does not exist answers ErrNotFound in its Result; any
// other failure fails the whole batch, which then changed nothing.
//
// BeginMany and CompleteMany look their rows up by key. Run them with
// dbutil.CustomPlans, or on a dbutil.IndexPool when the group is small: a
// plan an ordinary connection keeps may be one made while the table was
// small, which reads all of it.
func (s *Store) BeginMany(ctx context.Context, db DB, args []invocation.BeginArgs) ([]batch.Result[invocation.Begun], error) {
	out := make([]batch.Result[invocation.Begun], len(args))
	// One statement changes a row once: an invocation named twice (two jobs
	// of one invocation beginning together) begins again in the next one.
	for rest := indexes(len(args)); len(rest) > 0; {
		var p dbsqlc.InvocationBeginManyParams
		seen := make(map[uuid.UUID]bool, len(rest))
		var now, later []int
		for _, i := range rest {
			if seen[args[i].ID] {
				later = append(later, i)
				continue
			}
			seen[args[i].ID] = true
			now = append(now, i)
			p.Ids = append(p.Ids, args[i].ID)
			p.Attempts = append(p.Attempts, int32(args[i].Attempt))
		}
		rows, err := s.q.InvocationBeginMany(ctx, db, p)
		if err != nil {
			return nil, fmt.Errorf("beginning invocations: %w", err)
		}
		begun := make(map[uuid.UUID]invocation.Begun, len(rows))
		for _, r := range rows {
			inv := fromRow(r.ActionInvocation)
			inv.Status = invocation.Status(r.LockedStatus)
			if r.Started {
				inv.Status, inv.Attempt = invocation.StatusExecuting, r.AttemptNew
				inv.StartedAt, inv.UpdatedAt = &r.StartedAtNew, r.UpdatedAtNew
			}
			rc := runContext(r.Patterns, r.Windows, r.CredentialVersion)
			rc.StartedBefore = r.StartedBefore
			if r.PausedAt.After(time.Unix(0, 0)) {
				rc.PausedAt = &r.PausedAt
			}
			begun[inv.ID] = invocation.Begun{Invocation: inv, Run: rc, Started: r.Started}
		}
		for _, i := range now {
			b, ok := begun[args[i].ID]
			if !ok {
				out[i].Err = errs.Errorf(errs.NotFound, "invocation not found: %s", args[i].ID)
				continue
			}
			out[i].Value = b
		}
		rest = later
	}
	return out, nil
}

// indexes returns 0, 1, ..., n-1.
func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func runContext(patterns []string, windows json.RawMessage, credentialVersion time.Time) invocation.RunContext {
	rc := invocation.RunContext{DoNotContact: patterns, QuietHours: windows}
	if credentialVersion.After(time.Unix(0, 0)) {
		rc.CredentialVersion = credentialVersion
	}
	return rc
}

// PausedSince returns when org's current pause began, nil when it is not
// paused: what a worker asks before it takes a token for a job an earlier
// pause held (BeginMany reads it with the invocation otherwise).
func (s *Store) PausedSince(ctx context.Context, db DB, org string) (*time.Time, error) {
	at, err := s.q.OrgPausedSince(ctx, db, org)
	if err != nil || len(at) == 0 {
		return nil, err
	}
	return &at[0], nil
}

// GetByKey returns the invocation with the session's idempotency key or,
// when key is empty, the organization's external id. ok is false when there
// is none.
func (s *Store) GetByKey(ctx context.Context, db DB, org, sessionID, key, externalID string) (inv invocation.Invocation, ok bool, err error) {
	var r dbsqlc.ActionInvocation
	switch {
	case key != "":
		r, err = s.q.InvocationGetByIdempotencyKey(ctx, db, dbsqlc.InvocationGetByIdempotencyKeyParams{OrganizationID: org, SessionID: &sessionID, IdempotencyKey: &key})
	case externalID != "":
		r, err = s.q.InvocationGetByExternalID(ctx, db, dbsqlc.InvocationGetByExternalIDParams{OrganizationID: org, ExternalID: &externalID})
	default:
		return inv, false, nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return inv, false, nil
	}
	if err != nil {
		return inv, false, fmt.Errorf("looking up idempotency key: %w", err)
	}
	return fromRow(r), true, nil
}

// ByExternalIDs returns the organization's invocations with these external
// ids, by external id.
func (s *Store) ByExternalIDs(ctx context.Context, db DB, org string, externalIDs []string) (map[string]invocation.Invocation, error) {
	rows, err := s.q.InvocationListByExternalIDs(ctx, dbutil.CustomPlans{DBTX: db}, dbsqlc.InvocationListByExternalIDsParams{OrganizationID: org, ExternalIds: externalIDs})
	if err != nil {
		return nil, fmt.Errorf("looking up external ids: %w", err)
	}
	out := make(map[string]invocation.Invocation, len(rows))
	for _, r := range rows {
		out[*r.ExternalID] = fromRow(r)
	}
	return out, nil
}

// window is p with the defaults and caps invocation.Page documents
// applied, as the queries take it.
func window(p invocation.Page) (limit, offset int32) {
	l := p.Limit
	if l <= 0 {
		l = 50
	}
	return int32(min(l, 100)), int32(min(max(p.Offset, 0), math.MaxInt32))
}

// ListSession returns a session's invocations of the sources the claim
// allows, newest first.
func (s *Store) ListSession(ctx context.Context, db DB, org, sessionID string, sources auth.SourceClaim, page invocation.Page) ([]invocation.Invocation, error) {
	limit, offset := window(page)
	rows, err := s.q.InvocationListBySession(ctx, db, dbsqlc.InvocationListBySessionParams{
		OrganizationID: org, SessionID: &sessionID, Sources: sources.Filter(), Max: limit, Skip: offset,
	})
	if err != nil {
		return nil, fmt.Errorf("listing invocations: %w", err)
	}
	return fromRows(rows), nil
}

// ListOrg returns the organization's invocations that pass f, newest
// first, and how many there are in all.
func (s *Store) ListOrg(ctx context.Context, db DB, org string, f invocation.ListFilter, page invocation.Page) ([]invocation.Invocation, int64, error) {
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	limit, offset := window(page)
	rows, err := s.q.InvocationListByOrg(ctx, db, dbsqlc.InvocationListByOrgParams{
		OrganizationID: org, Status: opt(string(f.Status)), Integration: opt(f.Integration), Sources: f.Sources.Filter(), Origin: opt(f.Origin),
		SessionID: opt(f.SessionID), AutomationID: opt(f.AutomationID), CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore,
		Max: limit, Skip: offset,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("listing invocations: %w", err)
	}
	total, err := s.q.InvocationCountByOrg(ctx, db, dbsqlc.InvocationCountByOrgParams{
		OrganizationID: org, Status: opt(string(f.Status)), Integration: opt(f.Integration), Sources: f.Sources.Filter(), Origin: opt(f.Origin),
		SessionID: opt(f.SessionID), AutomationID: opt(f.AutomationID), CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("counting invocations: %w", err)
	}
	return fromRows(rows), total, nil
}

// ListDeadLetters returns the organization's failed, undiscarded
// invocations of the sources the claim allows, newest first, and how many
// there are. Both statements are planned for their claim on every run
// (dbutil.CustomPlans): action_invocations_dead_letters does not hold the
// source, so a plan made for any claim reads every dead letter up to the
// page from the table, where one without a claim reads the index alone.
func (s *Store) ListDeadLetters(ctx context.Context, db DB, org string, sources auth.SourceClaim, page invocation.Page) ([]invocation.Invocation, int64, error) {
	limit, offset := window(page)
	ids, planned := sources.Filter(), dbutil.CustomPlans{DBTX: db}
	rows, err := s.q.DeadLetterList(ctx, planned, dbsqlc.DeadLetterListParams{OrganizationID: org, Sources: ids, Max: limit, Skip: offset})
	if err != nil {
		return nil, 0, fmt.Errorf("listing dead letters: %w", err)
	}
	total, err := s.q.DeadLetterCount(ctx, planned, dbsqlc.DeadLetterCountParams{OrganizationID: org, Sources: ids})
	if err != nil {
		return nil, 0, fmt.Errorf("counting dead letters: %w", err)
	}
	return fromRows(rows), total, nil
}

// CountPending counts a session's pending invocations.
func (s *Store) CountPending(ctx context.Context, db DB, org, sessionID string) (int64, error) {
	return s.q.InvocationCountPending(ctx, db, dbsqlc.InvocationCountPendingParams{OrganizationID: org, SessionID: &sessionID})
}

// Events returns an invocation's timeline, oldest first.
func (s *Store) Events(ctx context.Context, db DB, org string, id uuid.UUID) ([]invocation.Event, error) {
	rows, err := s.q.EventListByInvocation(ctx, db, dbsqlc.EventListByInvocationParams{InvocationID: id, OrganizationID: org})
	if err != nil {
		return nil, fmt.Errorf("loading events: %w", err)
	}
	out := make([]invocation.Event, len(rows))
	for i, r := range rows {
		out[i] = fromEvent(r)
	}
	return out, nil
}

// CreateMany is Record without the refusals: a withdrawn invocation is
// answered cancelled.
func (s *Store) CreateMany(ctx context.Context, tx pgx.Tx, ps []*invocation.CreateParams) ([]*invocation.Invocation, error) {
	out, _, err := s.Record(ctx, tx, ps)
	return out, err
}

// Record records new invocations with their jobs and created events in
// two statements: the jobs in one bulk insert, the invocations and their
// events in another. An invocation whose idempotency key or external id
// another one took meanwhile is nil in the answer (its jobs are deleted);
// the others are recorded.
//
// Each records the jti and iat of the token that asked for it (Token).
// Before, the Store's Refusals looks for the revocations that refuse those
// tokens (refusals), after the lock that orders it with the revocations'
// transactions; an invocation of a refused token is recorded and then
// withdrawn, in tx, as the revocation withdraws those recorded before it:
// it is answered cancelled (one created denied, denied) and never runs,
// and refused holds the refusal at its index (nil at the others').
func (s *Store) Record(ctx context.Context, tx pgx.Tx, ps []*invocation.CreateParams) (out []*invocation.Invocation, refused []*invocation.Refusal, err error) {
	client, err := s.jobs(ctx)
	if err != nil {
		return nil, nil, err
	}
	refusing, err := s.refusals(ctx, tx, ps)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]insertRow, len(ps))
	var jobs []river.InsertManyParams
	type jobRef struct{ item, expiry, preview int }
	refs := make([]jobRef, len(ps))
	for i, p := range ps {
		rows[i] = insertRowOf(p)
		refs[i] = jobRef{-1, -1, -1}
		if p.Status == invocation.StatusDenied {
			continue
		}
		args, opts := executeJob(p.ID, p.OrganizationID, p.Integration, p.RateBucket, p.Retry, p.Status == invocation.StatusPending, p.TraceContext)
		if p.Behind {
			opts.Priority = fairness.PriorityBehind
		}
		refs[i].item = len(jobs)
		jobs = append(jobs, river.InsertManyParams{Args: args, InsertOpts: opts})
		if p.Status == invocation.StatusPending {
			if p.ExpiresAt == nil {
				return nil, nil, errors.New("a pending invocation needs ExpiresAt")
			}
			refs[i].expiry = len(jobs)
			jobs = append(jobs, river.InsertManyParams{Args: invocation.ExpireArgs{InvocationID: p.ID, OrganizationID: p.OrganizationID}, InsertOpts: &river.InsertOpts{
				ScheduledAt: *p.ExpiresAt, Metadata: tracing.JobMetadata(p.TraceContext),
			}})
			// Its preview renders while it waits (package preview).
			refs[i].preview = len(jobs)
			jobs = append(jobs, previewJob(p.ID, p.OrganizationID, p.TraceContext))
			if p.Behind {
				jobs[len(jobs)-1].InsertOpts.Priority = fairness.PriorityBehind
			}
		}
	}
	var jobIDs []int64
	if len(jobs) > 0 {
		res, err := client.InsertManyTx(ctx, tx, jobs)
		if err != nil {
			return nil, nil, fmt.Errorf("inserting jobs: %w", err)
		}
		for _, r := range res {
			jobIDs = append(jobIDs, r.Job.ID)
		}
		for i := range rows {
			if refs[i].item >= 0 {
				rows[i].JobID = &jobIDs[refs[i].item]
			}
		}
	}

	encoded, err := json.Marshal(rows)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding invocations: %w", err)
	}
	inserted, err := s.q.InvocationInsertMany(ctx, tx, encoded)
	if err != nil {
		return nil, nil, fmt.Errorf("inserting invocations: %w", err)
	}
	byID := make(map[uuid.UUID]*invocation.Invocation, len(inserted))
	for _, r := range inserted {
		inv := fromRow(r)
		byID[inv.ID] = &inv
	}
	out = make([]*invocation.Invocation, len(ps))
	for i, p := range ps {
		if out[i] = byID[p.ID]; out[i] != nil {
			continue
		}
		for _, j := range []int{refs[i].item, refs[i].expiry, refs[i].preview} {
			if j < 0 {
				continue
			}
			if _, err := client.JobDeleteTx(ctx, tx, jobIDs[j]); err != nil && !errors.Is(err, river.ErrNotFound) {
				return nil, nil, fmt.Errorf("deleting the job of a duplicate: %w", err)
			}
		}
	}
	if refused, err = s.withdrawRefused(ctx, tx, out, refusing); err != nil {
		return nil, nil, fmt.Errorf("withdrawing what a revoked token asked for: %w", err)
	}
	return out, refused, nil
}

// insertRow is one element of InvocationInsertMany's array: the columns by
// name, NULL where nil.
type insertRow struct {
	ID             uuid.UUID       `json:"id"`
	JobID          *int64          `json:"job_id"`
	OrganizationID string          `json:"organization_id"`
	SessionID      *string         `json:"session_id"`
	AutomationID   *string         `json:"automation_id"`
	UserID         *string         `json:"user_id"`
	RequestedBy    string          `json:"requested_by"`
	Origin         string          `json:"origin"`
	Integration    string          `json:"integration"`
	Action         string          `json:"action"`
	RiskLevel      string          `json:"risk_level"`
	Mode           string          `json:"mode"`
	ModeSource     string          `json:"mode_source"`
	Params         json.RawMessage `json:"params"`
	// ParamsSealed is bytea in its text form, \x and hex.
	ParamsSealed   *string           `json:"params_sealed"`
	ParamsHash     string            `json:"params_hash"`
	Status         invocation.Status `json:"status"`
	DeniedReason   *string           `json:"denied_reason"`
	ExpiresAt      *time.Time        `json:"expires_at"`
	ExternalID     *string           `json:"external_id"`
	IdempotencyKey *string           `json:"idempotency_key"`
	RateBucket     *string           `json:"rate_bucket"`
	MustRunBefore  *time.Time        `json:"must_run_before"`
	Approval       string            `json:"approval"`
	RiskHint       *string           `json:"risk_hint"`
	Retry          *invocation.Retry `json:"retry"`
	TraceContext   *string           `json:"trace_context"`
	GrantID        *uuid.UUID        `json:"grant_id"`
	IntentDigest   *string           `json:"intent_digest"`
	Intent         json.RawMessage   `json:"intent,omitempty"`
	TokenJTI       *string           `json:"token_jti"`
	TokenIssuedAt  *time.Time        `json:"token_issued_at"`
}

// insertRowOf is p as an element of InvocationInsertMany's array.
func insertRowOf(p *invocation.CreateParams) insertRow {
	r := insertRow{
		ID: p.ID, OrganizationID: p.OrganizationID, SessionID: nilIfEmpty(p.SessionID), AutomationID: nilIfEmpty(p.AutomationID),
		UserID: nilIfEmpty(p.UserID), RequestedBy: p.RequestedBy, Origin: p.Origin, Integration: p.Integration,
		Action: p.Action, RiskLevel: p.RiskLevel, Mode: p.Mode, ModeSource: p.ModeSource, Params: p.Params,
		ParamsHash: p.ParamsHash, Status: p.Status, DeniedReason: nilIfEmpty(p.DeniedReason),
		ExpiresAt: p.ExpiresAt, ExternalID: nilIfEmpty(p.ExternalID), IdempotencyKey: nilIfEmpty(p.IdempotencyKey),
		RateBucket: nilIfEmpty(p.RateBucket), MustRunBefore: p.MustRunBefore, Approval: p.Approval, RiskHint: nilIfEmpty(p.RiskHint),
		Retry: p.Retry, TraceContext: nilIfEmpty(p.TraceContext), GrantID: p.GrantID,
		IntentDigest: nilIfEmpty(p.IntentDigest), Intent: p.Intent,
	}
	if p.Token != nil {
		r.TokenJTI, r.TokenIssuedAt = nilIfEmpty(p.Token.JTI), p.Token.IssuedAt
	}
	if p.ParamsSealed != nil {
		sealed := `\x` + hex.EncodeToString(p.ParamsSealed)
		r.ParamsSealed = &sealed
	}
	return r
}

// Approve clears a pending invocation to run and releases its parked job,
// queued behind other organizations' when behind (package fairness): its
// place is decided when it becomes available, whatever it was given when
// it was asked for.
func (s *Store) Approve(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string, behind bool) (invocation.Invocation, error) {
	r, err := s.q.InvocationApprove(ctx, tx, dbsqlc.InvocationApproveParams{ID: id, Actor: &actor, TraceContext: nilIfEmpty(tracing.Traceparent(ctx))})
	inv, err := transitioned(r, err, id, "approving")
	if err != nil || inv.JobID == nil {
		return inv, err
	}
	client, err := s.jobs(ctx)
	if err != nil {
		return inv, err
	}
	if _, err := client.JobRetryTx(ctx, tx, *inv.JobID); err != nil {
		return inv, fmt.Errorf("releasing job: %w", err)
	}
	priority := 1
	if behind {
		priority = fairness.PriorityBehind
	}
	if _, err := tx.Exec(ctx, setPriority, *inv.JobID, priority); err != nil {
		return inv, fmt.Errorf("placing the released job: %w", err)
	}
	// River sends no notification for a retried job; without one the
	// approval would wait for the next fetch poll.
	if err := s.q.RiverWakeQueue(ctx, tx, invocation.QueueActions); err != nil {
		return inv, fmt.Errorf("waking the queue: %w", err)
	}
	return inv, nil
}

// setPriority gives River's job $1 the priority $2 (1, River's default, or
// fairness.PriorityBehind).
const setPriority = `UPDATE river_job SET priority = $2 WHERE id = $1 AND priority <> $2`

// Deny rejects a pending invocation and cancels its parked job. reason is
// a human's text; the caller redacts it.
func (s *Store) Deny(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor, deniedReason, reason string) (invocation.Invocation, error) {
	r, err := s.q.InvocationDeny(ctx, tx, dbsqlc.InvocationDenyParams{ID: id, Actor: &actor, DeniedReason: &deniedReason, Reason: nilIfEmpty(reason)})
	return s.cancelJob(ctx, tx)(transitioned(r, err, id, "denying"))
}

// Expire closes inv's approval window and cancels its parked job, if it is
// still pending with the window it was read with: one an intent change
// opened since (asking again) is not closed by a read of the old one.
func (s *Store) Expire(ctx context.Context, tx pgx.Tx, inv invocation.Invocation) (invocation.Invocation, error) {
	r, err := s.q.InvocationExpire(ctx, tx, dbsqlc.InvocationExpireParams{ID: inv.ID, ExpiresAt: inv.ExpiresAt})
	return s.cancelJob(ctx, tx)(transitioned(r, err, inv.ID, "expiring"))
}

// Cancel undoes an invocation that has not started (pending or approved)
// and cancels its job.
func (s *Store) Cancel(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor string) (invocation.Invocation, error) {
	r, err := s.q.InvocationCancel(ctx, tx, dbsqlc.InvocationCancelParams{ID: id, Actor: nilIfEmpty(actor)})
	return s.cancelJob(ctx, tx)(transitioned(r, err, id, "cancelling"))
}

// cancelJob returns a step that cancels the job of a transitioned
// invocation; a job already gone is fine.
func (s *Store) cancelJob(ctx context.Context, tx pgx.Tx) func(invocation.Invocation, error) (invocation.Invocation, error) {
	return func(inv invocation.Invocation, err error) (invocation.Invocation, error) {
		if err != nil || inv.JobID == nil {
			return inv, err
		}
		client, err := s.jobs(ctx)
		if err != nil {
			return inv, err
		}
		if _, err := client.JobCancelTx(ctx, tx, *inv.JobID); err != nil && !errors.Is(err, river.ErrNotFound) {
			return inv, fmt.Errorf("cancelling job: %w", err)
		}
		return inv, nil
	}
}

// Start marks an approved invocation executing for this attempt.
func (s *Store) Start(ctx context.Context, db DB, id uuid.UUID, attempt int) (invocation.Invocation, error) {
	r, err := s.q.InvocationStart(ctx, db, dbsqlc.InvocationStartParams{ID: id, Attempt: int32(attempt)})
	return transitioned(r, err, id, "starting")
}

// CompleteMany records the successful calls of several executing
// invocations (completed, with their events) in one statement. An
// invocation no longer executing answers ErrConflict in its Result; any
// other failure fails the whole batch, which then changed nothing.
func (s *Store) CompleteMany(ctx context.Context, db DB, cs []invocation.Completion) ([]batch.Result[struct{}], error) {
	var p dbsqlc.InvocationCompleteManyParams
	for _, c := range cs {
		o := c.Outcome
		p.Ids = append(p.Ids, c.ID)
		p.Results = append(p.Results, o.Result)
		p.ProviderRefs = append(p.ProviderRefs, o.ProviderRef)
		p.Conflicts = append(p.Conflicts, o.Conflict)
		p.Steps = append(p.Steps, stepsJSON(o.Steps))
		duration := int32(-1)
		if o.DurationMs != nil {
			duration = *o.DurationMs
		}
		p.DurationsMs = append(p.DurationsMs, duration)
	}
	ids, err := s.q.InvocationCompleteMany(ctx, db, p)
	if err != nil {
		return nil, fmt.Errorf("completing invocations: %w", err)
	}
	done := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		done[id] = true
	}
	out := make([]batch.Result[struct{}], len(cs))
	for i, c := range cs {
		if !done[c.ID] {
			out[i].Err = errs.Errorf(errs.Conflict, "completing %s: invocation is not in a state that allows this", c.ID)
		}
	}
	return out, nil
}

// Fail records a failure that will not be retried: a dead letter.
func (s *Store) Fail(ctx context.Context, db DB, id uuid.UUID, msg string, durationMs *int32) (invocation.Invocation, error) {
	return s.FailSteps(ctx, db, id, msg, durationMs, nil)
}

// FailSteps is Fail recording the verification and rollback the source
// ran before it gave up (steps may be nil).
func (s *Store) FailSteps(ctx context.Context, db DB, id uuid.UUID, msg string, durationMs *int32, steps *executors.Steps) (invocation.Invocation, error) {
	r, err := s.q.InvocationFail(ctx, db, dbsqlc.InvocationFailParams{ID: id, Error: &msg, DurationMs: durationMs, Steps: stepsJSON(steps)})
	return transitioned(r, err, id, "failing")
}

// stepsJSON encodes steps for the steps column, nil for none.
func stepsJSON(steps *executors.Steps) []byte {
	if steps == nil {
		return nil
	}
	b, _ := json.Marshal(steps)
	return b
}

// Skip finishes an invocation without calling the provider (a gate said
// so).
func (s *Store) Skip(ctx context.Context, db DB, id uuid.UUID, reason string) (invocation.Invocation, error) {
	r, err := s.q.InvocationSkip(ctx, db, dbsqlc.InvocationSkipParams{ID: id, Error: &reason})
	return transitioned(r, err, id, "skipping")
}

// ScheduleRetry records a failed attempt that River will retry.
// nothingDone says the attempt's refusal did nothing and no earlier
// attempt may have acted (executors.Error.NotDone): the next attempt is
// then not a retry (ExecuteContext.StartedBefore is false).
func (s *Store) ScheduleRetry(ctx context.Context, db DB, id uuid.UUID, msg string, durationMs *int32, nothingDone bool) (invocation.Invocation, error) {
	r, err := s.q.InvocationScheduleRetry(ctx, db, dbsqlc.InvocationScheduleRetryParams{ID: id, Error: &msg, DurationMs: durationMs, NothingDone: nothingDone})
	return transitioned(r, err, id, "recording retry")
}

// Snooze records a provider's request to wait; no attempt is spent.
// nothingDone is as for ScheduleRetry.
func (s *Store) Snooze(ctx context.Context, db DB, id uuid.UUID, msg string, durationMs *int32, nothingDone bool) (invocation.Invocation, error) {
	r, err := s.q.InvocationSnooze(ctx, db, dbsqlc.InvocationSnoozeParams{ID: id, Error: &msg, DurationMs: durationMs, NothingDone: nothingDone})
	return transitioned(r, err, id, "recording snooze")
}

// Replay gives a dead letter a fresh job with a full set of attempts and
// the invocation's own retry policy; the invocation id, and so the
// idempotency key sent to the provider, stays the same.
func (s *Store) Replay(ctx context.Context, tx pgx.Tx, inv invocation.Invocation, actor string) (invocation.Invocation, error) {
	client, err := s.jobs(ctx)
	if err != nil {
		return inv, err
	}
	args, opts := executeJob(inv.ID, inv.OrganizationID, inv.Integration, deref(inv.RateBucket), inv.Retry, false, inv.TraceContext)
	job, err := client.InsertTx(ctx, tx, args, opts)
	if err != nil {
		return inv, fmt.Errorf("inserting replay job: %w", err)
	}
	r, err := s.q.InvocationReplay(ctx, tx, dbsqlc.InvocationReplayParams{ID: inv.ID, Actor: &actor, JobID: &job.Job.ID})
	return transitioned(r, err, inv.ID, "replaying")
}

// Discard drops a dead letter from the list; it stays failed.
func (s *Store) Discard(ctx context.Context, db DB, id uuid.UUID, actor string) (invocation.Invocation, error) {
	r, err := s.q.InvocationDiscard(ctx, db, dbsqlc.InvocationDiscardParams{ID: id, Actor: &actor})
	return transitioned(r, err, id, "discarding")
}

// ListExpired returns pending invocations past their expiry, locked and
// skipping those another transaction holds.
func (s *Store) ListExpired(ctx context.Context, tx pgx.Tx, limit int) ([]invocation.Invocation, error) {
	rows, err := s.q.InvocationListExpiredForUpdate(ctx, tx, int32(limit))
	if err != nil {
		return nil, fmt.Errorf("listing expired invocations: %w", err)
	}
	return fromRows(rows), nil
}

func one(r dbsqlc.ActionInvocation, err error, id uuid.UUID) (invocation.Invocation, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return invocation.Invocation{}, errs.Errorf(errs.NotFound, "invocation not found: %s", id)
	}
	if err != nil {
		return invocation.Invocation{}, fmt.Errorf("loading invocation: %w", err)
	}
	return fromRow(r), nil
}

// transitioned turns a guarded update's answer into the invocation; no row
// means the invocation was not in a state the transition allows.
func transitioned[R row](r R, err error, id uuid.UUID, what string) (invocation.Invocation, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return invocation.Invocation{}, errs.Errorf(errs.Conflict, "%s %s: invocation is not in a state that allows this", what, id)
	}
	if err != nil {
		return invocation.Invocation{}, fmt.Errorf("%s %s: %w", what, id, err)
	}
	return fromRow(r), nil
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// executeJob is the one place an invocation's execute job is built: its
// args and insert options follow from the invocation, so a replay carries
// the same retry policy and bucket as the first run. pending parks it for
// approval.
func executeJob(id uuid.UUID, org, source, bucket string, retry *invocation.Retry, pending bool, traceContext string) (invocation.ExecuteArgs, *river.InsertOpts) {
	// The job's spans join the trace of the request that created the
	// invocation, in whichever process and at whichever attempt it runs.
	opts := &river.InsertOpts{Pending: pending, Metadata: tracing.JobMetadata(traceContext)}
	if retry != nil {
		opts.MaxAttempts = retry.MaxAttempts
	}
	return invocation.ExecuteArgs{InvocationID: id, Retry: retry, Bucket: &invocation.BucketRef{Name: bucket, Org: org, Source: source}}, opts
}
