package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/policy"
)

// ToolReview is a connector tool with its review state.
type ToolReview struct {
	Name        string
	Description string
	RiskTier    policy.Tier
	RiskLevel   string
	// Hash is the tool's current definition hash.
	Hash       string
	Mode       policy.Mode
	ModeSource string
	// ReviewedMode and ReviewedHash are the admin's review; empty when the
	// tool has none.
	ReviewedMode string
	ReviewedHash string
	Drifted      bool
	Params       json.RawMessage
}

// Tools lists a connector's tools with their current hash, the reviewed
// mode and hash, and whether they drifted.
func (s *Service) Tools(ctx context.Context, org, id string) ([]ToolReview, error) {
	src, defs, err := s.listTools(ctx, org, id, false)
	if err != nil {
		return nil, err
	}
	orgModes, err := s.modes(ctx, org)
	if err != nil {
		return nil, err
	}
	out := make([]ToolReview, 0, len(defs))
	for _, d := range defs {
		hash, err := policy.DefinitionHash(d.Params)
		if err != nil {
			return nil, fmt.Errorf("hashing tool %s: %w", d.ID, err)
		}
		action := catalog.Action{Source: src.entry(), Definition: d}
		res, drifted := action.Resolve(policy.ModeInput{OrgDefault: string(orgModes[src.ID()+":"+d.ID])})
		rv := src.reviewed[d.ID]
		tier := policy.TierOf(string(d.Tier))
		out = append(out, ToolReview{
			Name: d.ID, Description: d.Description, RiskTier: tier, RiskLevel: tier.Risk(), Hash: hash, Params: d.Params,
			Mode: res.Mode, ModeSource: string(res.Source), ReviewedMode: rv.Mode, ReviewedHash: rv.Hash, Drifted: drifted,
		})
	}
	return out, nil
}

// listTools resolves a connector of org and lists its server's tools,
// asking the server anew when fresh rather than from the cache (up to
// mcp.DefaultCacheTTL old); a server that does not list them is
// errs.SourceUnavailable.
func (s *Service) listTools(ctx context.Context, org, id string, fresh bool) (*source, []executors.Definition, error) {
	src, err := s.apiSource(ctx, org, id)
	if err != nil {
		return nil, nil, err
	}
	if fresh {
		s.client.Invalidate(src.row.ID)
	}
	defs, err := src.ListActions(ctx, executors.ExecContext{OrganizationID: org})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s", errs.SourceUnavailable, err)
	}
	return src, defs, nil
}

// ChangedError refuses a review whose tools' definitions changed since
// the admin saw them: the hash reviewed is not the tool's current one.
// Nothing of the review is stored. It is an errs.Conflict.
type ChangedError struct {
	// Tools are the tools whose definitions changed, sorted.
	Tools []string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("the definition of %s changed since it was shown (its hash differs): list the tools again and review what the server defines now",
		strings.Join(e.Tools, ", "))
}

func (e *ChangedError) Unwrap() error { return errs.Conflict }

// Review confirms modes for tools, each stored with its definition hash,
// which re-arms the drift guard. A review naming a hash (the one the admin
// saw) is for that definition: when a tool's current hash differs, the
// whole review is refused with a ChangedError and nothing is stored. One
// without a hash is for the tool's current definition: the server's tools
// are listed anew, not taken from the cache, so that it is the definition
// the server has now, and a hash is compared with that. Tools not named
// keep their review.
func (s *Service) Review(ctx context.Context, org, id string, reviews map[string]catalog.Review) ([]ToolReview, error) {
	src, defs, err := s.listTools(ctx, org, id, true)
	if err != nil {
		return nil, err
	}
	hashes := make(map[string]string, len(defs))
	for _, d := range defs {
		if hashes[d.ID], err = policy.DefinitionHash(d.Params); err != nil {
			return nil, err
		}
	}
	var fieldErrs []executors.FieldError
	var changed []string
	names := make([]string, 0, len(reviews))
	for name := range reviews {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		hash, ok := hashes[name]
		rv := reviews[name]
		switch {
		case !ok:
			fieldErrs = append(fieldErrs, executors.FieldError{Field: name, Message: "the connector has no such tool"})
		case !validMode(rv.Mode):
			fieldErrs = append(fieldErrs, executors.FieldError{Field: name, Message: fmt.Sprintf("invalid mode %q: use allow, deny or require_approval", rv.Mode)})
		case rv.Hash != "" && rv.Hash != hash:
			changed = append(changed, name)
		}
	}
	if len(fieldErrs) > 0 {
		return nil, &errs.ValidationError{Message: "invalid tool review", Fields: fieldErrs}
	}
	if len(changed) > 0 {
		return nil, &ChangedError{Tools: changed}
	}
	err = s.store.SetReviews(ctx, org, src.row.ID, func(cur []byte) ([]byte, error) {
		reviewed := map[string]catalog.Review{}
		if err := json.Unmarshal(cur, &reviewed); err != nil {
			return nil, err
		}
		for name, rv := range reviews {
			reviewed[name] = catalog.Review{Mode: rv.Mode, Hash: hashes[name]}
		}
		return json.Marshal(reviewed)
	})
	if err != nil {
		return nil, fmt.Errorf("storing tool review: %w", err)
	}
	return s.Tools(ctx, org, id)
}

func validMode(mode string) bool {
	_, ok := policy.ParseMode(mode)
	return ok
}
