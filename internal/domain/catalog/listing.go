package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/policy"
)

// Caller is who asks for the catalog: the token's org, automation, user and
// sources claim.
type Caller struct {
	OrganizationID string
	AutomationID   string
	UserID         string
	// Sources is the token's sources claim: absent, any source; present,
	// only those it lists.
	Sources auth.SourceClaim
}

// Reader answers what a caller may use: the actions available to it with
// the mode each resolves to now (Available), and an integration's guide
// (Guide). It reads; nothing here writes.
type Reader struct {
	catalog     *Catalog
	credentials CredentialLister
	modes       ModeReader
	logger      *slog.Logger
}

// CredentialLister lists the integrations with a stored credential for an
// organization or a user: the credential store.
type CredentialLister interface {
	Integrations(ctx context.Context, org, userID string) ([]string, error)
}

// ModeReader reads the mode overrides of an organization (automationID "")
// or of one automation: the settings service.
type ModeReader interface {
	GetModes(ctx context.Context, org, automationID string) (policy.Modes, error)
}

// NewReader returns a Reader of c's sources with the overrides modes
// keeps. With credentials, a provider whose calls need a credential is
// listed only when one is stored; nil (a token broker) lists every
// provider and the broker decides at call time.
func NewReader(c *Catalog, credentials CredentialLister, modes ModeReader, logger *slog.Logger) *Reader {
	return &Reader{catalog: c, credentials: credentials, modes: modes, logger: cmp.Or(logger, slog.New(slog.DiscardHandler))}
}

// CredentialProviders lists the providers whose calls take a credential
// an organization stores, whether or not one is stored
// (Catalog.CredentialProviders).
func (r *Reader) CredentialProviders() []CredentialProvider { return r.catalog.CredentialProviders() }

// AvailableAction is one entry of a session's action catalog. RiskTier is
// the action's risk tier (R0–R4) and RiskLevel its risk word (read, write,
// danger).
type AvailableAction struct {
	Source      string
	Action      string
	Description string
	RiskTier    policy.Tier
	RiskLevel   string
	Mode        policy.Mode
	ModeSource  policy.ModeSource
	Params      json.RawMessage
	// Output is the JSON Schema of the action's structured result, when it
	// declares one (executors.Definition.Output).
	Output json.RawMessage
	// Delivery is what a retry after a lost answer can do at the provider:
	// exactly_once, reconciled or at_least_once (executors.Delivery).
	Delivery executors.Delivery
	// Hash is the definition's canonical hash (policy.DefinitionHash of the
	// params schema): it changes when the contract changes, not when only
	// descriptions, defaults or enums do.
	Hash string
	// Drifted marks a connector tool changed since an admin reviewed it.
	Drifted bool
	// Disabled marks an action that is listed but cannot be invoked now
	// (a plugin while plugin code execution is off); its source's status
	// says why.
	Disabled bool
}

// SourceStatus is one source in the catalog: ok, or why its actions are
// missing (an unreachable connector).
type SourceStatus struct {
	Source string
	// Name is the display name; empty when the id is the name.
	Name   string
	Status string
	// Error says why the status is not ok; empty when it is.
	Error string
}

// Listing is what a caller may use.
type Listing struct {
	Actions []AvailableAction
	Sources []SourceStatus
}

// catalogSource is a source usable by a caller with its definitions, or
// the error that kept them from being listed (an unreachable connector).
type catalogSource struct {
	id   string
	src  *Source
	defs []executors.Definition
	err  error
	// noCredential marks a provider listed although no credential is
	// stored for it (All only): its actions cannot be invoked yet.
	noCredential bool
}

// sources lists what a caller may use: registered sources allowed by the
// sources claim and, for a provider whose calls need a credential, when
// the token source can tell (the credential store), with a credential for
// the org or the caller's user. With unconfigured, the providers without
// a credential are listed too, marked noCredential.
func (r *Reader) sources(ctx context.Context, c *Caller, unconfigured bool) ([]catalogSource, error) {
	var configured map[string]bool
	if r.credentials != nil {
		ids, err := r.credentials.Integrations(ctx, c.OrganizationID, c.UserID)
		if err != nil {
			return nil, err
		}
		configured = make(map[string]bool, len(ids))
		for _, id := range ids {
			configured[id] = true
		}
	}
	all, err := r.catalog.List(ctx, c.OrganizationID)
	if err != nil {
		return nil, err
	}
	var out []catalogSource
	for _, src := range all {
		id := src.ID()
		if !c.Sources.Allows(id) {
			continue
		}
		missing := !src.OrgRegistered && src.NeedsCredential && configured != nil && !configured[id]
		if missing && !unconfigured {
			continue
		}
		entry := catalogSource{id: id, src: src, noCredential: missing}
		entry.defs, entry.err = src.ListActions(ctx, executors.ExecContext{OrganizationID: c.OrganizationID})
		if entry.err != nil {
			r.logger.WarnContext(ctx, "listing actions failed", "source_id", id, "error", entry.err)
		}
		out = append(out, entry)
	}
	return out, nil
}

// NoCredential is the status of a source listed by All that takes a
// credential and has none stored.
const NoCredential = "no_credential"

// Available lists the actions a caller may use, with the mode each resolves
// to for it now, and the state of every source: an unreachable connector is
// listed with its error and no actions, and the other sources are
// unaffected.
func (r *Reader) Available(ctx context.Context, c *Caller) (*Listing, error) {
	return r.listing(ctx, c, false)
}

// All lists what Available does and, besides, the actions of the providers
// whose calls need a credential and that have none stored yet: every
// action an admin may set a mode for. Those actions are Disabled and their
// source's status is NoCredential. Agents are served Available.
func (r *Reader) All(ctx context.Context, c *Caller) (*Listing, error) {
	return r.listing(ctx, c, true)
}

func (r *Reader) listing(ctx context.Context, c *Caller, unconfigured bool) (*Listing, error) {
	srcs, err := r.sources(ctx, c, unconfigured)
	if err != nil {
		return nil, err
	}
	resolve, err := r.modeResolver(ctx, c)
	if err != nil {
		return nil, err
	}
	out := &Listing{Actions: []AvailableAction{}, Sources: []SourceStatus{}}
	for _, src := range srcs {
		status := SourceStatus{Source: src.id, Name: src.src.Name, Status: "ok"}
		switch {
		case src.err != nil:
			status.Status, status.Error = "unreachable", src.err.Error()
		case src.src.Disabled != "":
			status.Status, status.Error = "disabled", src.src.Disabled
		case src.noCredential:
			status.Status, status.Error = NoCredential, "no credential is stored for "+src.id+" (PUT /v1/credentials/"+src.id+")"
		}
		out.Sources = append(out.Sources, status)
		for _, d := range src.defs {
			res, drifted := resolve(src, d)
			hash, err := policy.DefinitionHash(d.Params)
			if err != nil {
				return nil, fmt.Errorf("hashing %s.%s: %w", src.id, d.ID, err)
			}
			tier := policy.TierOf(string(d.Tier))
			out.Actions = append(out.Actions, AvailableAction{
				Source: src.id, Action: d.ID, Description: d.Description, RiskTier: tier, RiskLevel: tier.Risk(),
				Mode: res.Mode, ModeSource: res.Source, Params: d.Params, Output: d.Output, Delivery: d.Delivery.OrDefault(), Hash: hash, Drifted: drifted,
				Disabled: src.src.Disabled != "" || src.noCredential,
			})
		}
	}
	return out, nil
}

// modeResolver loads the caller's overrides once and resolves actions
// against them.
func (r *Reader) modeResolver(ctx context.Context, c *Caller) (func(catalogSource, executors.Definition) (policy.Resolution, bool), error) {
	orgModes, err := r.modes.GetModes(ctx, c.OrganizationID, "")
	if err != nil {
		return nil, err
	}
	automationModes := policy.Modes{}
	if c.AutomationID != "" {
		if automationModes, err = r.modes.GetModes(ctx, c.OrganizationID, c.AutomationID); err != nil {
			return nil, err
		}
	}
	return func(src catalogSource, d executors.Definition) (policy.Resolution, bool) {
		key := src.id + ":" + d.ID
		return Action{Source: src.src, Definition: d}.Resolve(policy.ModeInput{
			AutomationOverride: string(automationModes[key]),
			OrgDefault:         string(orgModes[key]),
		})
	}, nil
}
