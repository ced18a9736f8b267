package settings

import (
	"context"
	"fmt"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
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
// integrations.
func (s *Service) PutCredential(ctx context.Context, p *PutCredentialParams) (credential.Info, error) {
	if _, ok := s.deps.Providers.Source(p.Integration); !ok {
		return credential.Info{}, fmt.Errorf("%w: integration %s", errs.NotFound, p.Integration)
	}
	if strings.TrimSpace(p.Token) == "" {
		return credential.Info{}, errs.Invalid("token", "token is required")
	}
	if len(p.UserID) > 255 {
		return credential.Info{}, errs.Invalid("user_id", "user_id must be at most 255 characters")
	}
	switch p.TokenKind {
	case "", executors.TokenKindAPIKey, executors.TokenKindOAuth:
	default:
		return credential.Info{}, errs.Invalid("token_kind", "token_kind must be api_key or oauth")
	}
	return s.deps.Credentials.Put(ctx,
		credential.Request{Org: p.OrganizationID, Integration: p.Integration, UserID: p.UserID},
		credential.Token{Value: p.Token, Kind: p.TokenKind}, p.By)
}

// DeleteCredential deletes one of the registry's integrations' stored
// credentials: the organization's when userID is "", else that user's.
func (s *Service) DeleteCredential(ctx context.Context, org, integration, userID string) error {
	if _, ok := s.deps.Providers.Source(integration); !ok {
		return fmt.Errorf("%w: integration %s", errs.NotFound, integration)
	}
	found, err := s.deps.Credentials.Delete(ctx, credential.Request{Org: org, Integration: integration, UserID: userID})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: no %s credential stored", errs.NotFound, integration)
	}
	return nil
}

// ListCredentials lists the organization's stored credentials, without the
// tokens.
func (s *Service) ListCredentials(ctx context.Context, org string) ([]credential.Info, error) {
	return s.deps.Credentials.List(ctx, org)
}
