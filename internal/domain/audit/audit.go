package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/audit/auditstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Actor is who made a change and from where.
type Actor struct {
	// Subject is the token's subject (sub); "operator" for the CLI.
	Subject string `json:"subject"`
	// Kind is the token's kind (user, service, sandbox), "operator" for the
	// CLI, or KindInternal.
	Kind string `json:"kind"`
	// Role is a user's role (member, admin, owner); "" otherwise.
	Role string `json:"role,omitempty"`
	// ClientAddr is the client's address as the API saw it; for the CLI,
	// the host it ran on ("host:" and its name).
	ClientAddr string `json:"client_addr,omitempty"`
}

type actorKey struct{}

// WithActor returns a context whose changes are recorded as actor's: the
// API puts the verified caller there, and the services that record in
// their own transaction take it from there.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor WithActor put in ctx.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// KindOperator is the actor kind of a change made with outboxd's CLI:
// the subject is the operating system's user, the client address the
// host ("host:" and its name).
const KindOperator = "operator"

// KindInternal is the actor kind of a change made by outboxd's own code,
// not through the API: no token, no client address.
const KindInternal = "internal"

// Internal is the actor of a change whose context names none (WithActor):
// nil when it does, so that the context's is recorded; otherwise by, of
// kind KindInternal. For services that record in their own transaction
// and are also called from outboxd's own code.
func Internal(ctx context.Context, by string) *Actor {
	if _, ok := ActorFrom(ctx); ok {
		return nil
	}
	return &Actor{Subject: by, Kind: KindInternal}
}

// Change is one administrative change to record.
type Change struct {
	// Org is the organization changed.
	Org string
	// Actor is who changed it; nil takes the context's (WithActor).
	Actor *Actor
	// Action names the change: "<target type>.<verb>", such as
	// "action_modes.replace" or "webhook.rotate_secret".
	Action string
	// TargetType and TargetID name what changed ("connector" and its id;
	// "action_modes" and "org" or the automation's id).
	TargetType, TargetID string
	// Before and After are the target's state around the change, as the
	// API shows it (nil for none: before a create, after a delete). They
	// are encoded as JSON and redacted (Redact).
	Before, After any
	// Sources are the sources the change concerns (a credential's
	// integration, an invocation's, a grant's, the dead letters'): a token
	// with a sources claim lists the entry when the claim allows every one
	// of them. None (nil or empty) is a change of the whole organization,
	// listed to tokens without a claim only. Nil takes, for a connector or
	// a database (target type "connector", "database"), its source id.
	// Action modes name the sources whose overrides changed (settings).
	// They are stored beside the entry, not hashed (Canonical).
	Sources []string
}

// Entry is one recorded change, as listed and exported: every field the
// chain covers, and the hash.
type Entry struct {
	OrganizationID string          `json:"organization_id"`
	Seq            int64           `json:"seq"`
	OccurredAt     time.Time       `json:"occurred_at"`
	Actor          Actor           `json:"actor"`
	Action         string          `json:"action"`
	TargetType     string          `json:"target_type"`
	TargetID       string          `json:"target_id"`
	Before         json.RawMessage `json:"before"`
	After          json.RawMessage `json:"after"`
	PrevHash       string          `json:"prev_hash"`
	Hash           string          `json:"hash"`
}

// Recorder records changes: in the caller's transaction (RecordTx) or in
// its own (Record). Services that record take this interface.
type Recorder interface {
	Record(ctx context.Context, c *Change) error
	RecordTx(ctx context.Context, tx pgx.Tx, c *Change) error
}

// Filter narrows a listing; zero fields match everything.
type Filter struct {
	// Actor is a subject.
	Actor string
	// Action is an action ("webhook.update") or a target type's prefix
	// ("webhook", matching every webhook.* action).
	Action string
	// TargetType and TargetID name a target.
	TargetType, TargetID string
	// Since and Until bound occurred_at: since included, until not.
	Since, Until *time.Time
	// BeforeSeq is the cursor: entries older than this seq (0: newest).
	BeforeSeq int64
	// Sources, when not nil, are a token's sources claim (auth.SourceClaim's
	// Filter): only the entries that name a source and none outside it
	// match; an empty list matches none.
	Sources []string
	// Limit is at most MaxLimit; 0 is DefaultLimit.
	Limit int
}

// DefaultLimit and MaxLimit bound a listing's page.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Service records, lists and exports audit entries.
type Service struct {
	pool  *pgxpool.Pool
	store *auditstore.Store
	now   func() time.Time
}

// New returns a Service on pool: the API's tenant pool (each request's
// context carries its organization), or the owner's for the CLI.
func New(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, store: auditstore.New(), now: time.Now}
}

// Record records c in a transaction of its own, for a change already
// committed.
func (s *Service) Record(ctx context.Context, c *Change) error {
	return dbutil.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		return s.RecordTx(ctx, tx, c)
	})
}

// RecordTx appends c to its organization's chain in tx: it locks the
// chain until tx ends, reads its head and inserts the next entry.
func (s *Service) RecordTx(ctx context.Context, tx pgx.Tx, c *Change) error {
	e, err := s.entry(ctx, c)
	if err != nil {
		return err
	}
	sources := sourcesOf(c)
	if err := s.store.LockChain(ctx, tx, c.Org); err != nil {
		return fmt.Errorf("locking the audit chain: %w", err)
	}
	seq, prev, err := s.store.Head(ctx, tx, c.Org)
	if err != nil {
		return fmt.Errorf("reading the audit chain's head: %w", err)
	}
	if seq == 0 {
		// No entry: the chain starts at 1, or after those retention deleted.
		a, err := s.store.Anchor(ctx, tx, c.Org)
		if err != nil {
			return fmt.Errorf("reading the audit chain's anchor: %w", err)
		}
		if a != nil {
			seq, prev = a.PrunedThrough, a.PrevHash
		}
	}
	e.Seq, e.PrevHash = seq+1, prev
	e.Hash = Hash(&e)
	row := toRow(&e)
	row.Sources = sources
	if err := s.store.Insert(ctx, tx, row); err != nil {
		return fmt.Errorf("recording %s: %w", c.Action, err)
	}
	return nil
}

// entry builds c's entry but for its place in the chain.
func (s *Service) entry(ctx context.Context, c *Change) (Entry, error) {
	actor := c.Actor
	if actor == nil {
		a, ok := ActorFrom(ctx)
		if !ok {
			return Entry{}, errors.New("audit: a change without an actor")
		}
		actor = &a
	}
	if c.Org == "" || c.Action == "" || c.TargetType == "" {
		return Entry{}, errors.New("audit: a change needs an organization, an action and a target type")
	}
	before, err := Encode(c.Before)
	if err != nil {
		return Entry{}, fmt.Errorf("encoding the state before %s: %w", c.Action, err)
	}
	after, err := Encode(c.After)
	if err != nil {
		return Entry{}, fmt.Errorf("encoding the state after %s: %w", c.Action, err)
	}
	return Entry{
		OrganizationID: c.Org, OccurredAt: s.now().UTC().Truncate(time.Microsecond), Actor: *actor,
		Action: c.Action, TargetType: c.TargetType, TargetID: c.TargetID, Before: before, After: after,
	}, nil
}

// List returns org's entries matching f, newest first, and the cursor of
// the next page (0 when this one is the last).
func (s *Service) List(ctx context.Context, org string, f *Filter) ([]Entry, int64, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	if f.Sources != nil && len(f.Sources) == 0 {
		return nil, 0, nil // a claim of no source allows no entry
	}
	p := &auditstore.ListParams{
		Org: org, BeforeSeq: f.BeforeSeq, Actor: f.Actor, Action: f.Action, TargetType: f.TargetType, TargetID: f.TargetID,
		Since: f.Since, Until: f.Until, Sources: f.Sources, Limit: limit + 1,
	}
	out := make([]Entry, 0, limit+1)
	for {
		rows, err := s.store.List(ctx, s.pool, p)
		if err != nil {
			return nil, 0, fmt.Errorf("listing audit entries: %w", err)
		}
		for i := range rows {
			// The store lists those naming one of the sources; an entry
			// that also names another is not listed (Filter.Sources).
			if f.Sources == nil || within(rows[i].Sources, f.Sources) {
				out = append(out, fromRow(&rows[i]))
			}
		}
		if len(rows) < p.Limit || len(out) > limit {
			break
		}
		p.BeforeSeq = rows[len(rows)-1].Seq // some were dropped: read on
	}
	var next int64
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].Seq
	}
	return out, next, nil
}

// within reports whether every one of sources is in claim.
func within(sources, claim []string) bool {
	for _, id := range sources {
		if !slices.Contains(claim, id) {
			return false
		}
	}
	return true
}

// exportBatch is how many entries an export reads at a time.
const exportBatch = 500

// Anchor is where an organization's chain starts once retention deleted
// its oldest entries (retention.audit_entries): the first kept entry's seq
// and the hash it names as its prev_hash, the hash of the newest entry
// deleted. An export starts with it, on a line of its own
// ({"anchor": {...}}), and Verify checks the chain from it.
type Anchor struct {
	OrganizationID string `json:"organization_id"`
	// FirstSeq is the seq of the first entry kept.
	FirstSeq int64 `json:"first_seq"`
	// PrevHash is the hash of the entry before it, which was deleted.
	PrevHash string `json:"prev_hash"`
	// PrunedBefore is the cut-off the deleted entries were older than;
	// PrunedAt when the last of them were deleted; PrunedTotal how many
	// retention deleted in all.
	PrunedBefore time.Time `json:"pruned_before"`
	PrunedAt     time.Time `json:"pruned_at"`
	PrunedTotal  int64     `json:"pruned_total"`
}

// AnchorLine is an export's first line when the organization has an
// anchor.
type AnchorLine struct {
	Anchor *Anchor `json:"anchor"`
}

// Export calls anchor with org's anchor, if retention deleted any of its
// entries, then entry with each of its entries, oldest first, reading them
// in batches; it stops at the first error. It reads in one snapshot
// (a repeatable-read transaction), so that retention deleting meanwhile
// neither cuts the export nor moves its anchor.
func (s *Service) Export(ctx context.Context, org string, anchor func(*Anchor) error, entry func(*Entry) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("exporting audit entries: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	a, err := s.store.Anchor(ctx, tx, org)
	if err != nil {
		return fmt.Errorf("reading the audit chain's anchor: %w", err)
	}
	var after int64
	if a != nil {
		after = a.PrunedThrough
		if err := anchor(anchorOf(a)); err != nil {
			return err
		}
	}
	for {
		rows, err := s.store.Export(ctx, tx, org, after, exportBatch)
		if err != nil {
			return fmt.Errorf("exporting audit entries: %w", err)
		}
		for i := range rows {
			e := fromRow(&rows[i])
			if err := entry(&e); err != nil {
				return err
			}
			after = e.Seq
		}
		if len(rows) < exportBatch {
			return nil
		}
	}
}

// AnchorOf returns org's anchor, nil when none of its entries was deleted.
func (s *Service) AnchorOf(ctx context.Context, org string) (*Anchor, error) {
	a, err := s.store.Anchor(ctx, s.pool, org)
	if err != nil || a == nil {
		return nil, err
	}
	return anchorOf(a), nil
}

func anchorOf(a *auditstore.Anchor) *Anchor {
	return &Anchor{
		OrganizationID: a.Org, FirstSeq: a.PrunedThrough + 1, PrevHash: a.PrevHash,
		PrunedBefore: a.PrunedBefore.UTC(), PrunedAt: a.PrunedAt.UTC(), PrunedTotal: a.PrunedTotal,
	}
}

func toRow(e *Entry) *auditstore.Row {
	return &auditstore.Row{
		Org: e.OrganizationID, Seq: e.Seq, OccurredAt: e.OccurredAt,
		ActorSubject: e.Actor.Subject, ActorKind: e.Actor.Kind, ActorRole: e.Actor.Role, ClientAddr: e.Actor.ClientAddr,
		Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID,
		Before: string(e.Before), After: string(e.After), PrevHash: e.PrevHash, Hash: e.Hash,
	}
}

func fromRow(r *auditstore.Row) Entry {
	return Entry{
		OrganizationID: r.Org, Seq: r.Seq, OccurredAt: r.OccurredAt.UTC(),
		Actor:  Actor{Subject: r.ActorSubject, Kind: r.ActorKind, Role: r.ActorRole, ClientAddr: r.ClientAddr},
		Action: r.Action, TargetType: r.TargetType, TargetID: r.TargetID,
		Before: json.RawMessage(r.Before), After: json.RawMessage(r.After), PrevHash: r.PrevHash, Hash: r.Hash,
	}
}
