// Package approvers decides who may approve a pending invocation and how
// many of them must: an organization's approval policy names how many
// distinct approvers each risk tier needs (over approvals.required; a tier
// named nowhere needs one) and its approver groups, matched per source
// and per tier, first match first, each with its members (user ids), its
// roles and its Slack channel. A group decides whose inbox shows the
// request, who may approve or deny it, and which Slack channel gets its
// message; with no group matching, today's rule holds: every admin and
// owner, the organization's Slack channel.
//
// The outbox records each approval through Gate in the decision's
// transaction (its invocation row locked): the approval that makes the
// count releases the invocation, the ones before it leave it pending.
package approvers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/approvers/approversstore"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/etag"
	"github.com/outboxd/outboxd/policy"
)

// MaxRequired bounds the approvers a tier may need; MaxGroups the groups.
const (
	MaxRequired = 10
	MaxGroups   = 50
)

// Config is the deployment's default (approvals.*).
type Config struct {
	// Required is approvals.required: the distinct approvers a tier needs
	// when the organization's policy does not say. A tier named nowhere
	// needs one.
	Required map[policy.Tier]int
}

// DefaultRequired is approvals.required's default: R4 needs two
// approvers, every other tier one.
func DefaultRequired() map[policy.Tier]int { return map[policy.Tier]int{policy.TierR4: 2} }

// Group is one approver group. Members and Roles say who is in it (either
// suffices); Sources and Tiers which requests it takes (empty: any).
type Group struct {
	Name    string        `json:"name"`
	Members []string      `json:"members"`
	Roles   []string      `json:"roles"`
	Sources []string      `json:"sources"`
	Tiers   []policy.Tier `json:"tiers"`
	// SlackChannel gets the group's approval messages; nil: the
	// organization's channel.
	SlackChannel *string `json:"slack_channel"`
}

// Policy is an organization's approval policy.
type Policy struct {
	// Required overrides approvals.required per tier.
	Required map[policy.Tier]int `json:"required"`
	// Groups are matched in order; the first that takes a request is its.
	Groups []Group `json:"groups"`
}

// ETag is the entity tag of a policy as Get returns it.
func ETag(p Policy) string { return etag.Of(p) }

// Approver is a person deciding: their user id (the token's subject) and
// their role in the organization.
type Approver struct {
	UserID string
	Role   string
}

// Approval is one person's approval.
type Approval struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// Progress is where an invocation's approvals stand.
type Progress struct {
	Approvals []Approval
	Required  int
	// Group is the approver group that takes the request; nil: the
	// organization's admins and owners.
	Group *Group
}

// Remaining is how many more approvals the invocation waits for.
func (p *Progress) Remaining() int { return max(p.Required-len(p.Approvals), 0) }

// Eligible reports whether a may decide the request: anyone the route's
// API and Slack checks admit when no group takes it, else a member of the
// group by user id or role.
func (p *Progress) Eligible(a Approver) bool {
	g := p.Group
	return g == nil || slices.Contains(g.Members, a.UserID) || (a.Role != "" && slices.Contains(g.Roles, a.Role))
}

// Deps are the service's collaborators.
type Deps struct {
	// Pool is the API's (the tenant role's).
	Pool *pgxpool.Pool
	// Audit records each replacement of a policy in its transaction; nil
	// records nothing.
	Audit audit.Recorder
	// Progressed runs in the transaction of an approval that leaves its
	// invocation pending (the Slack message's update); nil does nothing.
	Progressed func(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation) error
}

// Service holds the approval policies and records approvals.
type Service struct {
	deps  Deps
	cfg   Config
	store *approversstore.Store
}

// New returns a Service.
func New(deps *Deps, cfg *Config) *Service {
	return &Service{deps: *deps, cfg: *cfg, store: approversstore.New(deps.Pool)}
}

// Get returns org's policy (empty when it stored none).
func (s *Service) Get(ctx context.Context, org string) (Policy, error) {
	return s.policy(ctx, s.deps.Pool, org)
}

func (s *Service) policy(ctx context.Context, db dbutil.DB, org string) (Policy, error) {
	p := Policy{Required: map[policy.Tier]int{}, Groups: []Group{}}
	r, ok, err := s.store.Policy(ctx, db, org)
	if err != nil {
		return p, fmt.Errorf("loading the approval policy: %w", err)
	}
	if !ok {
		return p, nil
	}
	if err := json.Unmarshal(r.Required, &p.Required); err != nil {
		return p, fmt.Errorf("decoding the approval policy: %w", err)
	}
	if err := json.Unmarshal(r.Groups, &p.Groups); err != nil {
		return p, fmt.Errorf("decoding the approver groups: %w", err)
	}
	normalizePolicy(&p)
	return p, nil
}

// normalizePolicy makes a policy's nil map and lists empty: a policy put
// without "groups" (or "required") reads back as [] ({}), as its
// documented shape says, not null.
func normalizePolicy(p *Policy) {
	if p.Required == nil {
		p.Required = map[policy.Tier]int{}
	}
	if p.Groups == nil {
		p.Groups = []Group{}
	}
	for i := range p.Groups {
		normalize(&p.Groups[i])
	}
}

// normalize makes a group's nil lists empty, so that a stored policy and
// the one read back compare (and tag) alike.
func normalize(g *Group) {
	for _, l := range []*[]string{&g.Members, &g.Roles, &g.Sources} {
		if *l == nil {
			*l = []string{}
		}
	}
	if g.Tiers == nil {
		g.Tiers = []policy.Tier{}
	}
}

// Put replaces org's policy. A non-empty ifMatch must name the current
// policy's ETag (errs.PreconditionFailed otherwise).
func (s *Service) Put(ctx context.Context, org, by string, p Policy, ifMatch string) (Policy, error) {
	if err := validate(&p); err != nil {
		return Policy{}, err
	}
	normalizePolicy(&p)
	required, _ := json.Marshal(p.Required)
	groups, _ := json.Marshal(p.Groups)
	var after Policy
	err := s.store.Locked(ctx, org, func(ctx context.Context, tx pgx.Tx) error {
		before, err := s.policy(ctx, tx, org)
		if err != nil {
			return err
		}
		if current := ETag(before); !etag.Matches(ifMatch, current) {
			return errs.Errorf(errs.PreconditionFailed, "the approval policy changed since it was read: If-Match %s, current ETag %s; read it again and reapply the change", ifMatch, current)
		}
		if err := s.store.PutPolicy(ctx, tx, org, by, approversstore.Policy{Required: required, Groups: groups}); err != nil {
			return fmt.Errorf("storing the approval policy: %w", err)
		}
		if after, err = s.policy(ctx, tx, org); err != nil {
			return err
		}
		if s.deps.Audit == nil {
			return nil
		}
		return s.deps.Audit.RecordTx(ctx, tx, &audit.Change{Org: org, Actor: audit.Internal(ctx, by), Action: "approval_policy.replace",
			TargetType: "approval_policy", Before: before, After: after})
	})
	return after, err
}

// validate checks a policy and normalises its tiers (R4, r4 → R4).
func validate(p *Policy) error {
	req := make(map[policy.Tier]int, len(p.Required))
	for t, n := range p.Required {
		tier, ok := parseTier(string(t))
		if !ok {
			return errs.Invalid("required", "required: %q is not one of R0, R1, R2, R3, R4", t)
		}
		if n < 1 || n > MaxRequired {
			return errs.Invalid("required."+string(tier), "required.%s must be between 1 and %d", tier, MaxRequired)
		}
		if _, dup := req[tier]; dup {
			// R4 and r4: which count holds would depend on map order.
			return errs.Invalid("required."+string(tier), "required names %s twice (%q and another spelling)", tier, t)
		}
		req[tier] = n
	}
	p.Required = req
	if len(p.Groups) > MaxGroups {
		return errs.Invalid("groups", "at most %d approver groups", MaxGroups)
	}
	names := map[string]bool{}
	for i := range p.Groups {
		g := &p.Groups[i]
		field := fmt.Sprintf("groups[%d]", i)
		if g.Name == "" || len(g.Name) > 100 {
			return errs.Invalid(field+".name", "%s.name must be 1 to 100 bytes", field)
		}
		if names[g.Name] {
			return errs.Invalid(field+".name", "%s.name %q is taken by another group", field, g.Name)
		}
		names[g.Name] = true
		normalize(g)
		if len(g.Members) == 0 && len(g.Roles) == 0 {
			return errs.Invalid(field, "%s needs members or roles: nobody could approve what it takes", field)
		}
		for _, l := range [][]string{g.Members, g.Sources} {
			for _, v := range l {
				if v == "" || len(v) > 255 {
					return errs.Invalid(field, "%s: members and sources must be 1 to 255 bytes each", field)
				}
			}
		}
		for _, r := range g.Roles {
			if r != "admin" && r != "owner" {
				return errs.Invalid(field+".roles", "%s.roles: %q is not admin or owner (only they decide)", field, r)
			}
		}
		for j, t := range g.Tiers {
			tier, ok := parseTier(string(t))
			if !ok {
				return errs.Invalid(field+".tiers", "%s.tiers: %q is not one of R0, R1, R2, R3, R4", field, t)
			}
			g.Tiers[j] = tier
		}
		if c := g.SlackChannel; c != nil && (*c == "" || len(*c) > 255) {
			return errs.Invalid(field+".slack_channel", "%s.slack_channel must be a Slack channel id or name of 1 to 255 bytes, or null", field)
		}
	}
	return nil
}

// parseTier reads R0 to R4 only (not the risk words).
func parseTier(s string) (policy.Tier, bool) {
	t, ok := policy.ParseTier(s)
	return t, ok && len(s) == 2
}

// route returns the group that takes inv (nil: none) and the approvals it
// needs.
func (s *Service) route(p *Policy, inv *invocation.Invocation) Progress {
	pr := Progress{Required: s.required(p, policy.TierOf(inv.RiskLevel))}
	for i := range p.Groups {
		g := &p.Groups[i]
		if (len(g.Sources) == 0 || slices.Contains(g.Sources, inv.Integration)) && (len(g.Tiers) == 0 || slices.Contains(g.Tiers, policy.TierOf(inv.RiskLevel))) {
			pr.Group = g
			break
		}
	}
	return pr
}

// required is how many distinct approvals p asks of tier.
func (s *Service) required(p *Policy, tier policy.Tier) int {
	return cmp.Or(p.Required[tier], s.cfg.Required[tier], 1)
}

// Required returns how many distinct approvals an invocation of tier needs
// in org, read on db: a grant, which lets invocations through without
// anyone, applies only where it is one.
func (s *Service) Required(ctx context.Context, db dbutil.DB, org string, tier policy.Tier) (int, error) {
	p, err := s.policy(ctx, db, org)
	if err != nil {
		return 0, err
	}
	return s.required(&p, tier), nil
}

// Progress returns where each invocation's approvals stand, by id, read
// on db (the API's pool, or the workers' for every organization). The
// invocations are of one organization, org.
func (s *Service) Progress(ctx context.Context, db dbutil.DB, org string, invs []invocation.Invocation) (map[uuid.UUID]*Progress, error) {
	out := make(map[uuid.UUID]*Progress, len(invs))
	if len(invs) == 0 {
		return out, nil
	}
	if db == nil {
		db = s.deps.Pool
	}
	p, err := s.policy(ctx, db, org)
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, len(invs))
	for i := range invs {
		ids[i] = invs[i].ID
		pr := s.route(&p, &invs[i])
		pr.Approvals = []Approval{}
		out[invs[i].ID] = &pr
	}
	approvals, err := s.store.Approvals(ctx, db, ids)
	if err != nil {
		return nil, fmt.Errorf("loading approvals: %w", err)
	}
	for _, a := range approvals {
		if pr := out[a.InvocationID]; pr != nil {
			pr.Approvals = append(pr.Approvals, Approval{By: a.Approver, At: a.DecidedAt})
		}
	}
	return out, nil
}

// ProgressOf is Progress of one invocation.
func (s *Service) ProgressOf(ctx context.Context, db dbutil.DB, inv *invocation.Invocation) (*Progress, error) {
	m, err := s.Progress(ctx, db, inv.OrganizationID, []invocation.Invocation{*inv})
	if err != nil {
		return nil, err
	}
	return m[inv.ID], nil
}

// Approve records the approval of inv by userID (with role) in tx, where
// the caller holds inv's row lock, and reports whether the approvals now
// suffice to release it. Someone outside inv's approver group is
// errs.NotApprover; a second approval by the same person is
// errs.AlreadyApproved, and changes nothing.
func (s *Service) Approve(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation, userID, role string) (done bool, required int, err error) {
	pr, err := s.ProgressOf(ctx, tx, inv)
	if err != nil {
		return false, 0, err
	}
	if !pr.Eligible(Approver{UserID: userID, Role: role}) {
		return false, pr.Required, notApprover(pr, userID)
	}
	added, err := s.store.Insert(ctx, tx, inv.OrganizationID, inv.ID, userID, inv.IntentDigest)
	if err != nil {
		return false, pr.Required, fmt.Errorf("recording the approval: %w", err)
	}
	if !added {
		return false, pr.Required, errs.Errorf(errs.AlreadyApproved, "%s approved this invocation already; it waits for %d more approval(s) from someone else", userID, pr.Remaining())
	}
	if len(pr.Approvals)+1 >= pr.Required {
		return true, pr.Required, nil
	}
	if s.deps.Progressed != nil {
		if err := s.deps.Progressed(ctx, tx, inv); err != nil {
			return false, pr.Required, err
		}
	}
	return false, pr.Required, nil
}

// MayDeny checks that userID (with role) may deny inv: anyone who may
// approve it.
func (s *Service) MayDeny(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation, userID, role string) error {
	pr, err := s.ProgressOf(ctx, tx, inv)
	if err != nil {
		return err
	}
	if !pr.Eligible(Approver{UserID: userID, Role: role}) {
		return notApprover(pr, userID)
	}
	return nil
}

func notApprover(pr *Progress, userID string) error {
	return errs.Errorf(errs.NotApprover, "%s is not in the approver group %q that decides this invocation", userID, pr.Group.Name)
}

// ChannelOrganizations returns the organizations with an approver group
// that has a Slack channel, read on db.
func (s *Service) ChannelOrganizations(ctx context.Context, db dbutil.DB) ([]string, error) {
	return s.store.ChannelOrganizations(ctx, db)
}
