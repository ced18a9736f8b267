// Package grant holds grants: a human's approval of the next few
// invocations like one they approve, narrower than an "always allow"
// override. A grant is created with the approval of a pending invocation of
// a session or an automation ("approve this and the next N like it for T
// minutes"). It lets through at most N later invocations of the same
// action in the same session (or automation) whose params hold the exact
// values the approver fixed (the same channel, say), until T minutes have
// passed. Each invocation it lets through is created approved, with
// mode_source "grant" and the grant's id.
//
// A grant ends when its count or its time runs out, or when it is revoked:
// by an admin (DELETE /v1/grants/{id}), or by outboxd when the action's
// definition drifts (its definition hash differs from the one the grant
// was made with, or a reviewed connector tool drifted since its review:
// the invocation then waits for a human) or when the source's credential
// is stored again or deleted. Any credential replacement revokes: outboxd
// cannot tell whether a new token is the same identity's, so it assumes it
// is not.
//
// The outbox uses a grant (Keeper) inside the transaction that records an
// invocation, so the use and the invocation commit together, and the use
// is one conditional UPDATE on the grant's row: concurrent requests take
// its row lock in turn and each sees the count the previous one left, so
// a grant of N lets exactly N through however many race for it.
package grant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/grant/grantstore"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/policy"
)

// Grant is one grant (see grantstore.Grant).
type Grant = grantstore.Grant

// Scopes of a grant: the invocation's automation when it has one, else
// its session.
const (
	ScopeSession    = "session"
	ScopeAutomation = "automation"
)

// Reasons of a revocation.
const (
	ReasonManual     = "manual"
	ReasonDrift      = "drift"
	ReasonCredential = "credential"
	// ReasonOffboarded: the person who made it had their tokens revoked
	// by subject (Offboarding).
	ReasonOffboarded = "offboarded"
)

// System is the revoker of the grants outboxd revokes itself.
const System = "outboxd"

// ModeSource is the mode_source of an invocation a grant let through.
const ModeSource = "grant"

// Limits of a Spec.
const (
	MaxCount   = 1000
	MaxMinutes = 7 * 24 * 60
	MaxFixed   = 32
	listLimit  = 500
)

// Spec is what an approver asks for: Count more invocations within Minutes,
// with the params named in Fixed holding the approved invocation's values.
type Spec struct {
	Count   int      `json:"count"`
	Minutes int      `json:"minutes"`
	Fixed   []string `json:"fixed"`
}

// Validate checks s's shape (what the API can check before the
// invocation is read).
func (s *Spec) Validate() error {
	switch {
	case s.Count < 1 || s.Count > MaxCount:
		return errs.Invalid("grant.count", "grant.count must be an integer between 1 and %d", MaxCount)
	case s.Minutes < 1 || s.Minutes > MaxMinutes:
		return errs.Invalid("grant.minutes", "grant.minutes must be an integer between 1 and %d", MaxMinutes)
	case len(s.Fixed) > MaxFixed:
		return errs.Invalid("grant.fixed", "grant.fixed names at most %d params", MaxFixed)
	}
	seen := map[string]bool{}
	for _, name := range s.Fixed {
		if name == "" || seen[name] {
			return errs.Invalid("grant.fixed", "grant.fixed must name distinct params")
		}
		seen[name] = true
	}
	return nil
}

// Active reports whether g may still let an invocation through at now.
func Active(g *Grant, now time.Time) bool {
	return g.RevokedAt == nil && g.Remaining > 0 && now.Before(g.ExpiresAt)
}

// Keeper creates and uses grants inside the outbox's transactions.
type Keeper struct {
	store *grantstore.Store
}

// NewKeeper returns a Keeper.
func NewKeeper() *Keeper {
	return &Keeper{store: grantstore.New()}
}

// Create stores the grant spec asks for with the approval of inv, by the
// approver by, in db (the approval's transaction). definitionHash is the
// action's current definition hash. An invocation without a session or
// automation, or a fixed param that is missing, holds a secret or is
// stored other than sent, is an errs.ValidationError. exact are inv's
// params as sent (nil: its stored params are).
func (k *Keeper) Create(ctx context.Context, db dbutil.DB, inv *invocation.Invocation, exact json.RawMessage, spec *Spec, definitionHash, by string) (Grant, error) {
	if err := spec.Validate(); err != nil {
		return Grant{}, err
	}
	g := Grant{
		ID: uuid.Must(uuid.NewV7()), Org: inv.OrganizationID, SourceID: inv.Integration, ActionID: inv.Action,
		Granted: spec.Count, ExpiresAt: time.Now().Add(time.Duration(spec.Minutes) * time.Minute),
		DefinitionHash: definitionHash, CreatedBy: by, CreatedFrom: inv.ID,
	}
	if inv.UserID != nil {
		g.UserID = *inv.UserID // another person's invocations use their own credential
	}
	switch {
	case inv.AutomationID != nil && *inv.AutomationID != "":
		g.Scope, g.ScopeID = ScopeAutomation, *inv.AutomationID
	case inv.SessionID != nil && *inv.SessionID != "":
		g.Scope, g.ScopeID = ScopeSession, *inv.SessionID
	default:
		return Grant{}, errs.Invalid("grant", "only an invocation of a session or an automation can get a grant")
	}
	fixed, err := fixedValues(inv.Params, exact, spec.Fixed)
	if err != nil {
		return Grant{}, err
	}
	g.Fixed = fixed
	created, err := k.store.Insert(ctx, db, &g)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "grants_created_from" {
		// Asked again before its call, an invocation approved with a
		// grant is approved anew; it made its one grant already.
		return Grant{}, errs.Errorf(errs.Conflict, "an earlier approval of invocation %s made a grant already (one per invocation): approve it without a grant", inv.ID)
	}
	return created, err
}

// fixedValues takes the values of names from params (an invocation's
// stored, redacted params): each must be a top-level param whose value
// holds nothing redacted, so a grant never keeps a secret, and is stored
// as sent (exact; nil: params are), so a grant fixes the value approved.
func fixedValues(params, exact json.RawMessage, names []string) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if len(names) > 0 {
		if err := json.Unmarshal(matchable(params, exact), &top); err != nil {
			return nil, errs.Invalid("grant.fixed", "the invocation's params are not an object: no param can be fixed")
		}
	}
	out := make(map[string]json.RawMessage, len(names))
	for _, name := range names {
		v, ok := top[name]
		if !ok {
			var stored map[string]json.RawMessage
			if json.Unmarshal(params, &stored) == nil && stored[name] != nil {
				return nil, errs.Invalid("grant.fixed", "param %q is stored other than sent (a secret, or a number too large to store as one) and cannot be fixed in a grant", name)
			}
			return nil, errs.Invalid("grant.fixed", "the invocation has no param %q to fix", name)
		}
		if bytes.Contains(v, []byte(policy.Redacted)) {
			return nil, errs.Invalid("grant.fixed", "param %q holds a secret and cannot be fixed in a grant", name)
		}
		out[name] = v
	}
	return out, nil
}

// Request is an invocation about to be recorded as pending, as far as a
// grant goes.
type Request struct {
	Org, SourceID, ActionID string
	SessionID, AutomationID string
	// UserID is the user the invocation is made for ("" for none).
	UserID string
	// Params are the invocation's stored (redacted) params.
	Params json.RawMessage
	// Exact are the params as sent, which the provider receives (nil:
	// Params). A fixed value matches only a param whose stored value is
	// the one sent (matchable).
	Exact json.RawMessage
	// DefinitionHash is the action's current definition hash.
	DefinitionHash string
	// Drifted is set when a reviewed connector tool changed since its
	// review: every grant of the action is revoked.
	Drifted bool
}

// Covers reports whether a grant made for the definition hashed to made
// still covers its action, whose definition hashes to now, drifted when
// the action is a reviewed connector tool changed since its review. This
// is the one test of a grant's drift: the outbox's when it uses a grant
// (Keeper.Use), the worker's before a call a grant let through, and the
// API's when it lists grants.
func Covers(made, now string, drifted bool) bool {
	return !drifted && made == now
}

// Use takes one use of a live grant that lets r through, in db (the
// transaction that records the invocation), and returns its id; nil when
// no grant does. Grants of the action made with another definition hash
// are revoked on the way (ReasonDrift), in the same transaction, and
// returned in revoked, for the caller to record.
func (k *Keeper) Use(ctx context.Context, db dbutil.DB, r *Request) (id *uuid.UUID, revoked []uuid.UUID, err error) {
	if r.SessionID == "" && r.AutomationID == "" {
		return nil, nil, nil
	}
	if r.Drifted {
		revoked, err := k.store.RevokeAction(ctx, db, r.Org, r.SourceID, r.ActionID, "", System, ReasonDrift)
		if err != nil {
			return nil, nil, fmt.Errorf("revoking drifted grants: %w", err)
		}
		return nil, revoked, nil
	}
	cands, err := k.store.Candidates(ctx, db, r.Org, r.SourceID, r.ActionID, r.SessionID, r.AutomationID, r.UserID, matchable(r.Params, r.Exact))
	if err != nil {
		return nil, nil, fmt.Errorf("looking up grants: %w", err)
	}
	drifted := false
	for _, c := range cands {
		if !Covers(c.DefinitionHash, r.DefinitionHash, r.Drifted) {
			if !drifted {
				if revoked, err = k.store.RevokeAction(ctx, db, r.Org, r.SourceID, r.ActionID, r.DefinitionHash, System, ReasonDrift); err != nil {
					return nil, nil, fmt.Errorf("revoking drifted grants: %w", err)
				}
				drifted = true
			}
			continue
		}
		_, ok, err := k.store.Use(ctx, db, r.Org, c.ID)
		if err != nil {
			return nil, nil, fmt.Errorf("using grant: %w", err)
		}
		if ok {
			id := c.ID
			return &id, revoked, nil
		}
	}
	return nil, revoked, nil
}

// matchable returns the params a grant's fixed values are compared with:
// the stored ones, less each top-level param whose stored value is not the
// one sent (a secret redacted, a number jsonb cannot hold stored as its
// text, a key with a token scrubbed from it), which then matches no fixed
// value: a grant fixes exact values, and the string "1e999999" it fixed
// is not the number 1e999999 a request sends (and the provider receives),
// though both are stored alike. Params that cannot be read match none.
func matchable(stored, exact json.RawMessage) json.RawMessage {
	var compact bytes.Buffer
	if len(exact) == 0 || (json.Compact(&compact, exact) == nil && bytes.Equal(compact.Bytes(), stored)) {
		return stored
	}
	var s, x map[string]json.RawMessage
	if json.Unmarshal(stored, &s) != nil || json.Unmarshal(exact, &x) != nil {
		return json.RawMessage(`{}`)
	}
	for k, v := range s {
		if !sameValue(v, x[k]) {
			delete(s, k)
		}
	}
	out, err := json.Marshal(s)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return out
}

// sameValue reports whether a and b are the same JSON value, numbers
// compared as written; a missing (nil) one is no value.
func sameValue(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return false
	}
	decode := func(raw json.RawMessage) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	av, aok := decode(a)
	bv, bok := decode(b)
	return aok && bok && reflect.DeepEqual(av, bv)
}

// Offboarding revokes the live grants a person created when their tokens
// are revoked by subject (revocation.People), in the revocation's
// transaction: a grant is that person's approval given ahead, which
// should not outlast their access. Each is recorded in Trail as
// grant.revoke (reason ReasonOffboarded), by the revoker.
type Offboarding struct {
	Trail audit.Recorder
}

// Offboard revokes the live grants of org that subject created, by by.
func (o Offboarding) Offboard(ctx context.Context, tx pgx.Tx, org, subject, by string) error {
	revoked, err := grantstore.New().RevokeCreatedBy(ctx, tx, org, subject, by, ReasonOffboarded)
	if err != nil {
		return fmt.Errorf("revoking the grants %s created: %w", subject, err)
	}
	for _, g := range revoked {
		err := o.Trail.RecordTx(ctx, tx, &audit.Change{
			Org: org, Actor: audit.Internal(ctx, by), Action: "grant.revoke", TargetType: "grant", TargetID: g.ID.String(),
			Sources: []string{g.Source}, After: map[string]string{"revoke_reason": ReasonOffboarded, "revoked_by": by},
		})
		if err != nil {
			return fmt.Errorf("recording a grant's revocation in the audit trail: %w", err)
		}
	}
	return nil
}

// GiveBack returns the use of grant id that Use took for an invocation of
// org that was not recorded after all (another request had its key), in
// the same transaction.
func (k *Keeper) GiveBack(ctx context.Context, db dbutil.DB, org string, id uuid.UUID) error {
	return k.store.GiveBack(ctx, db, org, id)
}

// Service lists and revokes an organization's grants, for the API.
type Service struct {
	pool  *pgxpool.Pool
	store *grantstore.Store
}

// NewService returns a Service on pool (the API's tenant pool).
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, store: grantstore.New()}
}

// A token's sources claim narrows the grants it lists and revokes as it
// narrows the invocations it reads: a grant lets the invocations of its
// source through, so one of a source the claim does not allow is not
// listed, and is not found as an unknown id is.

// List returns org's grants of the sources sources allows, newest first;
// only the live ones with active.
func (s *Service) List(ctx context.Context, org string, sources auth.SourceClaim, active bool) ([]Grant, error) {
	return s.store.List(dbutil.WithOrg(ctx, org), s.pool, org, sources.Filter(), active, listLimit)
}

// Get returns one of org's grants of a source sources allows.
func (s *Service) Get(ctx context.Context, org, id string, sources auth.SourceClaim) (Grant, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return Grant{}, fmt.Errorf("%w: grant %s", errs.NotFound, id)
	}
	g, ok, err := s.store.Get(dbutil.WithOrg(ctx, org), s.pool, org, uid)
	if err == nil && (!ok || !sources.Allows(g.SourceID)) {
		return Grant{}, fmt.Errorf("%w: grant %s", errs.NotFound, id)
	}
	return g, err
}

// ByInvocation returns the grant made with the approval of invocation id;
// ok is false when there is none.
func (s *Service) ByInvocation(ctx context.Context, org string, id uuid.UUID) (Grant, bool, error) {
	return s.store.ByInvocation(dbutil.WithOrg(ctx, org), s.pool, org, id)
}

// Revoke revokes one of org's grants of a source sources allows by a
// person. An unknown grant, or one of another source, is errs.NotFound;
// one already revoked is errs.Conflict.
func (s *Service) Revoke(ctx context.Context, org, id, by string, sources auth.SourceClaim) (Grant, error) {
	before, err := s.Get(ctx, org, id, sources)
	if err != nil {
		return before, err
	}
	g, ok, err := s.store.Revoke(dbutil.WithOrg(ctx, org), s.pool, org, before.ID, by, ReasonManual)
	if err == nil && !ok {
		err = fmt.Errorf("%w: grant %s is already revoked", errs.Conflict, id)
	}
	return g, err
}

// RevokeSource revokes, in tx, every unrevoked grant of org's source
// sourceID, whose credential is stored again or deleted or whose server
// (a connector's url or auth) changes in tx (ReasonCredential), and
// returns their ids.
func (s *Service) RevokeSource(ctx context.Context, tx pgx.Tx, org, sourceID string) ([]uuid.UUID, error) {
	return s.store.RevokeSource(ctx, tx, org, sourceID, System, ReasonCredential)
}
