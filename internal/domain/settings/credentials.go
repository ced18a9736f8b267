package settings

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

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
// integrations. outboxd cannot tell whether a new token is the same
// identity's, so the source's grants are revoked in the same transaction
// (grant.ReasonCredential); revoked are their ids.
func (s *Service) PutCredential(ctx context.Context, p *PutCredentialParams) (info credential.Info, revoked []uuid.UUID, err error) {
	if _, ok := s.deps.Providers.Source(p.Integration); !ok {
		return info, nil, fmt.Errorf("%w: integration %s", errs.NotFound, p.Integration)
	}
	if strings.TrimSpace(p.Token) == "" {
		return info, nil, errs.Invalid("token", "token is required")
	}
	if len(p.UserID) > 255 {
		return info, nil, errs.Invalid("user_id", "user_id must be at most 255 characters")
	}
	switch p.TokenKind {
	case "", executors.TokenKindAPIKey, executors.TokenKindOAuth:
	default:
		return info, nil, errs.Invalid("token_kind", "token_kind must be api_key or oauth")
	}
	err = dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		info, err = s.deps.Credentials.PutTx(ctx, tx,
			credential.Request{Org: p.OrganizationID, Integration: p.Integration, UserID: p.UserID},
			credential.Token{Value: p.Token, Kind: p.TokenKind}, p.By)
		if err != nil {
			return err
		}
		revoked, err = s.revokeGrants(ctx, tx, p.OrganizationID, p.Integration)
		return err
	})
	return info, revoked, err
}

// DeleteCredential deletes one of the registry's integrations' stored
// credentials: the organization's when userID is "", else that user's.
// The source's grants are revoked with it; revoked are their ids.
func (s *Service) DeleteCredential(ctx context.Context, org, integration, userID string) (revoked []uuid.UUID, err error) {
	if _, ok := s.deps.Providers.Source(integration); !ok {
		return nil, fmt.Errorf("%w: integration %s", errs.NotFound, integration)
	}
	err = dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		found, err := s.deps.Credentials.DeleteOneTx(ctx, tx, credential.Request{Org: org, Integration: integration, UserID: userID})
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: no %s credential stored", errs.NotFound, integration)
		}
		revoked, err = s.revokeGrants(ctx, tx, org, integration)
		return err
	})
	return revoked, err
}

// revokeGrants revokes the grants of a source whose credential changed.
func (s *Service) revokeGrants(ctx context.Context, tx pgx.Tx, org, sourceID string) ([]uuid.UUID, error) {
	if s.deps.Grants == nil {
		return nil, nil
	}
	ids, err := s.deps.Grants.RevokeSource(ctx, tx, org, sourceID)
	if err != nil {
		return nil, fmt.Errorf("revoking the grants of %s: %w", sourceID, err)
	}
	return ids, nil
}

// ListCredentials lists the organization's stored credentials, without the
// tokens.
func (s *Service) ListCredentials(ctx context.Context, org string) ([]credential.Info, error) {
	return s.deps.Credentials.List(ctx, org)
}
