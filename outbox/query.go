package outbox

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/policy"
)

// Get returns one invocation of the organization.
func (s *Service) Get(ctx context.Context, org, id string) (invocation.Invocation, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return invocation.Invocation{}, fmt.Errorf("%w: invocation %s", ErrNotFound, id)
	}
	return s.store.Get(ctx, s.deps.Pool, org, uid)
}

// GetInSession returns one invocation of a session; an invocation of
// another session is not found.
func (s *Service) GetInSession(ctx context.Context, org, sessionID, id string) (invocation.Invocation, error) {
	inv, err := s.Get(ctx, org, id)
	if err != nil {
		return inv, err
	}
	if deref(inv.SessionID) != sessionID {
		return invocation.Invocation{}, fmt.Errorf("%w: invocation %s", ErrNotFound, id)
	}
	return inv, nil
}

// Events returns an invocation's timeline, oldest first.
func (s *Service) Events(ctx context.Context, org, id string) ([]invocation.Event, error) {
	inv, err := s.Get(ctx, org, id)
	if err != nil {
		return nil, err
	}
	return s.store.Events(ctx, s.deps.Pool, org, inv.ID)
}

// Page is a limit/offset window. Limit defaults to 50 and is capped at 100.
type Page struct {
	Limit, Offset int
}

func (p Page) normalized() invocation.Page {
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	return invocation.Page{Limit: int32(min(limit, 100)), Offset: int32(min(max(p.Offset, 0), math.MaxInt32))}
}

// ListSession returns a session's invocations, newest first.
func (s *Service) ListSession(ctx context.Context, org, sessionID string, page Page) ([]invocation.Invocation, error) {
	return s.store.ListSession(ctx, s.deps.Pool, org, sessionID, page.normalized())
}

// ListOrg is the organization's inbox and activity: invocations passing
// the filter, newest first, with the total count for paging.
func (s *Service) ListOrg(ctx context.Context, org string, f invocation.ListFilter, page Page) ([]invocation.Invocation, int64, error) {
	return s.store.ListOrg(ctx, s.deps.Pool, org, f, page.normalized())
}

// Modes is the API's map shape of mode overrides: "<source>:<action>" → mode.
type Modes map[string]policy.Mode

// GetModes returns the overrides of the org (automationID "") or of one
// automation.
func (s *Service) GetModes(ctx context.Context, org, automationID string) (Modes, error) {
	scope, scopeID := modeScope(org, automationID)
	rows, err := s.queries.ModeList(ctx, s.deps.Pool, dbsqlc.ModeListParams{OrganizationID: org, Scope: scope, ScopeID: scopeID})
	if err != nil {
		return nil, fmt.Errorf("listing modes: %w", err)
	}
	modes := make(Modes, len(rows))
	for _, r := range rows {
		modes[r.SourceID+":"+r.ActionID] = policy.Mode(r.Mode)
	}
	return modes, nil
}

// maxModeKeyBytes bounds an action-mode key; its parts are indexed.
const maxModeKeyBytes = 255

// PutModes replaces the overrides of the org or of one automation.
func (s *Service) PutModes(ctx context.Context, org, automationID, userID string, raw map[string]string) (Modes, error) {
	var fieldErrs []executors.FieldError
	type entry struct{ source, action, mode string }
	entries := make([]entry, 0, len(raw))
	for key, value := range raw {
		i := strings.LastIndex(key, ":")
		if i <= 0 || i == len(key)-1 || len(key) > maxModeKeyBytes {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: key, Message: fmt.Sprintf(`key must be "<source>:<action>", at most %d bytes`, maxModeKeyBytes)})
			continue
		}
		mode, ok := policy.ParseMode(value)
		if !ok {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: key, Message: fmt.Sprintf("invalid mode %q: use allow, deny or require_approval", value)})
			continue
		}
		entries = append(entries, entry{key[:i], key[i+1:], string(mode)})
	}
	if len(fieldErrs) > 0 {
		return nil, &ValidationError{Message: "invalid action modes", Fields: fieldErrs}
	}
	scope, scopeID := modeScope(org, automationID)
	err := dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.queries.ModeDeleteScope(ctx, tx, dbsqlc.ModeDeleteScopeParams{OrganizationID: org, Scope: scope, ScopeID: scopeID}); err != nil {
			return err
		}
		for _, e := range entries {
			err := s.queries.ModeUpsert(ctx, tx, dbsqlc.ModeUpsertParams{
				OrganizationID: org, Scope: scope, ScopeID: scopeID, SourceID: e.source, ActionID: e.action, Mode: e.mode, UpdatedBy: userID,
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storing modes: %w", err)
	}
	return s.GetModes(ctx, org, automationID)
}

func modeScope(org, automationID string) (string, string) {
	if automationID != "" {
		return "automation", automationID
	}
	return "org", org
}

// PutCredentialParams stores one provider token.
type PutCredentialParams struct {
	OrganizationID string
	Integration    string
	// UserID scopes the credential to one user; "" is the org's own.
	UserID string
	// TokenKind is "api_key", "oauth" or "" (the provider's usual form).
	TokenKind string
	Token     string
	By        string
}

// PutCredential stores a provider token for one of the registry's
// integrations.
func (s *Service) PutCredential(ctx context.Context, p *PutCredentialParams) (credential.Info, error) {
	if _, ok := s.deps.Sources.Static().Source(p.Integration); !ok {
		return credential.Info{}, fmt.Errorf("%w: integration %s", ErrNotFound, p.Integration)
	}
	if strings.TrimSpace(p.Token) == "" {
		return credential.Info{}, invalid("token", "token is required")
	}
	if len(p.UserID) > 255 {
		return credential.Info{}, invalid("user_id", "user_id must be at most 255 characters")
	}
	switch p.TokenKind {
	case "", executors.TokenKindAPIKey, executors.TokenKindOAuth:
	default:
		return credential.Info{}, invalid("token_kind", "token_kind must be api_key or oauth")
	}
	return s.deps.Credentials.Put(ctx,
		credential.Request{Org: p.OrganizationID, Integration: p.Integration, UserID: p.UserID},
		credential.Token{Value: p.Token, Kind: p.TokenKind}, p.By)
}

// ListCredentials lists the organization's stored credentials, without the
// tokens.
func (s *Service) ListCredentials(ctx context.Context, org string) ([]credential.Info, error) {
	return s.deps.Credentials.List(ctx, org)
}
