package revocation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/revocation/revocationstore"
)

// Revocation is one stored revocation (see revocationstore.Revocation).
type Revocation = revocationstore.Revocation

// DefaultRefreshInterval is Config.RefreshInterval's default.
const DefaultRefreshInterval = 2 * time.Second

// cleanupInterval is how often a running Service drops the revocations
// that have expired (storing one drops them too).
const cleanupInterval = 5 * time.Minute

// listLimit bounds the revocations List returns.
const listLimit = 1000

// Config configures a Service.
type Config struct {
	// RefreshInterval is how often the process looks for revocations made
	// elsewhere (auth.revocation_refresh): a token revoked in another
	// process is refused here, and its event streams end, at most this
	// long after. Default 2s.
	RefreshInterval time.Duration
	// MaxLifetime is auth.max_lifetime: a revocation is dropped this long
	// (plus Leeway) after its cut-off. Default 0: revocations are kept,
	// unless one by jti says when its token expires.
	MaxLifetime time.Duration
	// Leeway is auth.leeway, the clock skew the verifier allows on exp.
	// Default auth.DefaultLeeway.
	Leeway time.Duration
	// Logger logs failed refreshes. Default: discarded.
	Logger *slog.Logger
	// Now is the clock. Default time.Now; only tests set it.
	Now func() time.Time
}

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	c.RefreshInterval = cmp.Or(c.RefreshInterval, DefaultRefreshInterval)
	c.Leeway = cmp.Or(c.Leeway, auth.DefaultLeeway)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c *Config) validate() error {
	if c.RefreshInterval < 0 || c.MaxLifetime < 0 || c.Leeway < 0 {
		return errors.New("auth.revocation_refresh, auth.max_lifetime and auth.leeway must not be negative")
	}
	return nil
}

// Deps are a Service's pools.
type Deps struct {
	// Pool stores and lists an organization's revocations: the API's
	// tenant pool, or the owner's for the operator.
	Pool *pgxpool.Pool
	// Owner loads every organization's revocations.
	Owner *pgxpool.Pool
}

// Service revokes tokens and answers, from memory, whether a token is
// revoked.
type Service struct {
	cfg   Config
	store *revocationstore.Store
	owner *revocationstore.Store

	// refreshing serialises refreshes.
	refreshing sync.Mutex
	// loaded is the version idx was loaded at; -1 before the first load.
	loaded int64
	idx    atomic.Pointer[index]

	mu       sync.Mutex
	watchers map[*watcher]struct{}
	failing  bool

	// invocations withdraws what revoked tokens asked for (SetInvocations);
	// nil: nothing is withdrawn.
	invocations Invocations
	// people remove what a person revoked by subject may do without a
	// token (SetPeople).
	people []People
}

// watcher is an open stream's token, ended when it is revoked.
type watcher struct {
	claims *auth.Claims
	cancel context.CancelCauseFunc
}

// ErrRevoked is the cause of a watched context's end (Watch): the
// verifier's own refusal of a revoked token.
var ErrRevoked = auth.ErrTokenRevoked

// ErrKeyWithdrawn is the cause of a watched context's end (Watch) once
// the identity provider no longer publishes the key that signed its token
// (auth.Claims.KeyPublished): the token is refused from then on, as if
// revoked.
var ErrKeyWithdrawn = fmt.Errorf("%w: the identity provider no longer publishes its signing key", ErrRevoked)

// ErrExpired is the cause of a context Ends ended at its token's expiry.
var ErrExpired = errors.New("token expired")

// Watcher ends a context once its token is revoked (Service.Watch).
type Watcher interface {
	Watch(ctx context.Context, c *auth.Claims) (context.Context, context.CancelFunc)
}

// Ends returns a context that ends, besides with ctx, once c's token is
// revoked (cause ErrRevoked; w nil watches none) or has expired (cause
// ErrExpired): when the verifier stops accepting it (c.AcceptedUntil: a
// token of a previous HS256 secret at the end of its overlap), else leeway
// after its exp. It is what a long-lived stream of the token holds, so
// that it lasts no longer than a new request with it would be let in.
func Ends(ctx context.Context, w Watcher, c *auth.Claims, leeway time.Duration) (context.Context, func()) {
	stops := make([]func(), 0, 2)
	if w != nil {
		var stop context.CancelFunc
		ctx, stop = w.Watch(ctx, c)
		stops = append(stops, stop)
	}
	end := c.AcceptedUntil
	if end.IsZero() && c.ExpiresAt != nil {
		end = c.ExpiresAt.Add(leeway)
	}
	if !end.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, end, ErrExpired)
		stops = append(stops, stop)
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// New returns a Service. Nothing is loaded until Refresh or Run.
func New(deps *Deps, cfg *Config) (*Service, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: c, store: revocationstore.New(deps.Pool), owner: revocationstore.New(deps.Owner), loaded: -1, watchers: map[*watcher]struct{}{}}
	s.idx.Store(&index{})
	return s, nil
}

// Params say what to revoke: exactly one of JTI, SessionID, AutomationID,
// Subject and IssuedBefore.
type Params struct {
	JTI          string
	SessionID    string
	AutomationID string
	// Subject revokes one person's tokens: every token of the organization
	// whose verified claims carry it as their subject (auth.Claims.Subject:
	// sub, or the claim auth.idp.claims.subject names), user tokens and
	// console sessions alike, and every token acting for them, whose
	// user_id is it (auth.Claims.UserID: their agents' sandbox tokens,
	// their automations' service tokens).
	Subject string
	// IssuedBefore revokes every token of the organization issued before
	// it; it must not be in the future.
	IssuedBefore *time.Time
	// TokenExpiresAt is the revoked token's exp, with JTI only: the
	// revocation is dropped after it. Default: after the maximum lifetime.
	TokenExpiresAt *time.Time
	// By is who revokes (the owner's subject, the operator).
	By string
}

// maxExpiresYear bounds Params.TokenExpiresAt.
const maxExpiresYear = 9999

// selectors are the names of Params' selectors, as the API and the CLI
// name them.
var selectors = []string{"jti", "session_id", "automation_id", "subject", "issued_before"}

func (p *Params) validate(now time.Time) error {
	var named []string
	for i, set := range []bool{p.JTI != "", p.SessionID != "", p.AutomationID != "", p.Subject != "", p.IssuedBefore != nil} {
		if set {
			named = append(named, selectors[i])
		}
	}
	switch {
	case len(named) == 0:
		fields := make([]executors.FieldError, len(selectors))
		for i, f := range selectors {
			fields[i] = executors.FieldError{Field: f, Message: "name what to revoke: one of jti, session_id, automation_id, subject or issued_before"}
		}
		return &errs.ValidationError{Message: fields[0].Message, Fields: fields}
	case len(named) > 1:
		return errs.Invalid(named[1], "name one of jti, session_id, automation_id, subject or issued_before, not both %s and %s", named[0], named[1])
	}
	for _, f := range [][2]string{{"jti", p.JTI}, {"session_id", p.SessionID}, {"automation_id", p.AutomationID}, {"subject", p.Subject}} {
		if !claimText(f[1]) {
			return errs.Invalid(f[0], "%s must be valid text of at most 255 bytes without control characters, as in a token's claim", f[0])
		}
	}
	if p.IssuedBefore != nil && p.IssuedBefore.After(now) {
		return errs.Invalid("issued_before", "issued_before is in the future (now is %s): a revocation refuses tokens issued before a time that has come", now.UTC().Format(time.RFC3339))
	}
	if p.TokenExpiresAt != nil && p.JTI == "" {
		return errs.Invalid("expires_at", "expires_at is the revoked token's exp: give it with jti only")
	}
	if p.TokenExpiresAt != nil && p.TokenExpiresAt.Year() >= maxExpiresYear {
		// Its expiry, with the leeway, would be past what RFC 3339 (and
		// so the API's answers and the audit trail) can write.
		return errs.Invalid("expires_at", "expires_at must be before %d-01-01: leave it out for a token that expires later", maxExpiresYear)
	}
	return nil
}

// claimText reports whether s could be a verified token's claim (the
// verifier refuses the others): valid UTF-8 of at most 255 bytes without
// control characters. Postgres' text cannot hold a NUL either.
func claimText(s string) bool {
	if len(s) > 255 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// Revoke stores a revocation in org and loads the revocations again, so
// that this process refuses the tokens at once; other processes do within
// Config.RefreshInterval.
func (s *Service) Revoke(ctx context.Context, org string, p *Params) (Revocation, error) {
	now := s.cfg.Now()
	if err := p.validate(now); err != nil {
		return Revocation{}, err
	}
	r := &Revocation{Org: org, JTI: p.JTI, SessionID: p.SessionID, AutomationID: p.AutomationID, Subject: p.Subject, RevokedBy: p.By}
	switch {
	case p.IssuedBefore != nil:
		r.IssuedBefore = *p.IssuedBefore
	case p.JTI != "":
		// A jti names one token, which the verifier let in up to the
		// leeway before its iat (an issuer whose clock runs ahead): its
		// revocation refuses it however far ahead it was issued, the
		// invocations it asked for included. A token minted later
		// under the same jti works from the cut-off on, as for the
		// other selectors.
		r.IssuedBefore = cutoff(now.Add(s.cfg.Leeway))
	default:
		r.IssuedBefore = cutoff(now)
	}
	return s.insert(ctx, r, p.TokenExpiresAt)
}

// RevokeAll revokes every token of org issued until now, by by: what
// `outboxd org purge` leaves, as the revocations it deleted went with
// the organization. Its cut-off is Revoke's for a selector (the next
// whole second), its expiry any such revocation's.
func (s *Service) RevokeAll(ctx context.Context, org, by string) (Revocation, error) {
	return s.insert(ctx, &Revocation{Org: org, RevokedBy: by, IssuedBefore: cutoff(s.cfg.Now())}, nil)
}

// cutoff is the cut-off of a revocation made at now: tokens carry whole
// seconds, so every token issued until now is issued before the next one.
func cutoff(now time.Time) time.Time {
	return now.Truncate(time.Second).Add(time.Second)
}

// insert stores r, expiring as expiry says, and loads the revocations
// again.
func (s *Service) insert(ctx context.Context, r *Revocation, tokenExp *time.Time) (Revocation, error) {
	r.ExpiresAt = s.expiry(r.IssuedBefore, tokenExp)
	stored, err := s.store.Insert(ctx, r, s.inTx)
	if err != nil {
		return Revocation{}, fmt.Errorf("storing the revocation: %w", err)
	}
	if err := s.Refresh(context.WithoutCancel(ctx)); err != nil {
		s.cfg.Logger.WarnContext(ctx, "token revocations: loading after a revocation", "organization_id", r.Org, "error", err)
	}
	return stored, nil
}

// expiry is when a revocation with cut-off issuedBefore can be dropped:
// nil when nothing bounds the tokens it could refuse.
func (s *Service) expiry(issuedBefore time.Time, tokenExp *time.Time) *time.Time {
	var out *time.Time
	if s.cfg.MaxLifetime > 0 {
		t := issuedBefore.Add(s.cfg.MaxLifetime + s.cfg.Leeway)
		out = &t
	}
	if tokenExp != nil {
		if t := tokenExp.Add(s.cfg.Leeway); out == nil || t.Before(*out) {
			out = &t
		}
	}
	return out
}

// List returns org's revocations in effect, newest first (at most 1000).
func (s *Service) List(ctx context.Context, org string) ([]Revocation, error) {
	return s.store.List(ctx, org, listLimit)
}

// Revoked reports whether c, a verified token's claims, is revoked, by
// the revocations this process loaded last (auth.Revocations).
func (s *Service) Revoked(c *auth.Claims) bool {
	return s.idx.Load().revoked(c)
}

// Watch returns a context that ends, with cause ErrRevoked, once c is
// revoked (at the refresh that learns of it), or when ctx ends; stop
// releases it.
func (s *Service) Watch(ctx context.Context, c *auth.Claims) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancelCause(ctx)
	w := &watcher{claims: c, cancel: cancel}
	s.mu.Lock()
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	if s.Revoked(c) {
		cancel(ErrRevoked)
	} else if !c.KeyPublished() {
		cancel(ErrKeyWithdrawn)
	}
	return wctx, func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
		cancel(context.Canceled)
	}
}

// Refresh loads the revocations again when their version changed since
// the last load, and ends the watched contexts of tokens now revoked.
func (s *Service) Refresh(ctx context.Context) error {
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	version, err := s.owner.Version(ctx)
	if err != nil {
		return fmt.Errorf("reading the revocations' version: %w", err)
	}
	if version == s.loaded {
		return nil
	}
	version, all, err := s.owner.Load(ctx)
	if err != nil {
		return fmt.Errorf("loading the revocations: %w", err)
	}
	idx := newIndex(all)
	s.idx.Store(idx)
	s.loaded = version
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		if idx.revoked(w.claims) {
			w.cancel(ErrRevoked)
			delete(s.watchers, w)
		}
	}
	return nil
}

// Run refreshes every Config.RefreshInterval until ctx ends, and drops
// expired revocations now and then. A failed refresh is logged (once until
// one succeeds) and the revocations loaded last keep applying.
func (s *Service) Run(ctx context.Context) {
	refresh := time.NewTicker(s.cfg.RefreshInterval)
	defer refresh.Stop()
	cleanup := time.NewTicker(cleanupInterval)
	defer cleanup.Stop()
	s.refresh(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			s.refresh(ctx)
		case <-cleanup.C:
			if n, err := s.owner.DeleteExpired(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.WarnContext(ctx, "token revocations: dropping expired ones", "error", err)
			} else if n > 0 {
				s.cfg.Logger.DebugContext(ctx, "token revocations: dropped expired ones", "count", n)
			}
		}
	}
}

func (s *Service) refresh(ctx context.Context) {
	err := s.Refresh(ctx)
	if ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The identity provider's keys are fetched apart from the
	// revocations: a stream of a token whose key was withdrawn ends at
	// the refresh after outboxd learnt of it.
	for w := range s.watchers {
		if !w.claims.KeyPublished() {
			w.cancel(ErrKeyWithdrawn)
			delete(s.watchers, w)
		}
	}
	switch {
	case err != nil && !s.failing:
		s.failing = true
		s.cfg.Logger.WarnContext(ctx, "token revocations: refresh failed; the revocations loaded last keep applying", "error", err)
	case err == nil && s.failing:
		s.failing = false
		s.cfg.Logger.InfoContext(ctx, "token revocations: refreshed again")
	}
}

// index is the revocations by organization, each selector's latest
// cut-off.
type index struct {
	orgs map[string]*cutoffs
}

type cutoffs struct {
	all                               time.Time
	jti, session, automation, subject map[string]time.Time
}

func newIndex(all []Revocation) *index {
	idx := &index{orgs: map[string]*cutoffs{}}
	for i := range all {
		r := &all[i]
		c := idx.orgs[r.Org]
		if c == nil {
			c = &cutoffs{jti: map[string]time.Time{}, session: map[string]time.Time{}, automation: map[string]time.Time{}, subject: map[string]time.Time{}}
			idx.orgs[r.Org] = c
		}
		switch {
		case r.JTI != "":
			c.jti[r.JTI] = later(c.jti[r.JTI], r.IssuedBefore)
		case r.SessionID != "":
			c.session[r.SessionID] = later(c.session[r.SessionID], r.IssuedBefore)
		case r.AutomationID != "":
			c.automation[r.AutomationID] = later(c.automation[r.AutomationID], r.IssuedBefore)
		case r.Subject != "":
			c.subject[r.Subject] = later(c.subject[r.Subject], r.IssuedBefore)
		default:
			c.all = later(c.all, r.IssuedBefore)
		}
	}
	return idx
}

// revoked reports whether a revocation refuses c: one of its organization
// whose selector c matches (a subject's matches c's subject and its
// user_id), with c issued before its cut-off (or without iat).
func (idx *index) revoked(c *auth.Claims) bool {
	o := idx.orgs[c.Org]
	if o == nil {
		return false
	}
	cut := o.all
	if c.ID != "" {
		cut = later(cut, o.jti[c.ID])
	}
	if c.SessionID != "" {
		cut = later(cut, o.session[c.SessionID])
	}
	if c.AutomationID != "" {
		cut = later(cut, o.automation[c.AutomationID])
	}
	if c.Subject != "" {
		cut = later(cut, o.subject[c.Subject])
	}
	// A sandbox or service token acting for a person (user_id, which
	// names them as a user token's subject does: an approver's subject is
	// compared with it) is refused with that person's tokens, so that
	// revoking someone also stops the agents acting in their name.
	if c.UserID != "" {
		cut = later(cut, o.subject[c.UserID])
	}
	if cut.IsZero() {
		return false
	}
	return c.IssuedAt == nil || c.IssuedAt.Before(cut)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
